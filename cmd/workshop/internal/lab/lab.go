package lab

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// Known are the workshop's labs in order; the ones without a directory
// are shown as coming soon.
var Known = []string{
	"01-timeouts",
	"02-deadlines",
	"03-retries",
	"04-retry-budgets",
	"05-breaker",
	"06-bulkhead",
	"07-fallback",
	"08-idempotency",
	"09-hedging",
	"10-game-day",
}

// DirName matches a lab directory name and captures its number.
var DirName = regexp.MustCompile(`^([0-9]{2})-[a-z0-9][a-z0-9-]*$`)

// Lab is one lab, present or not.
type Lab struct {
	Name    string // directory name, "01-timeouts"
	Present bool   // labs/<Name> exists
}

// Num returns the lab's number as written, "01".
func (l Lab) Num() string { return l.Name[:2] }

// Title returns the lab's name without its number, "timeouts".
func (l Lab) Title() string { return l.Name[3:] }

// Dir returns the lab's slash path from the repository root.
func (l Lab) Dir() string { return "labs/" + l.Name }

// Pattern returns the go package pattern for the lab, "./labs/01-timeouts/".
func (l Lab) Pattern() string { return "./labs/" + l.Name + "/" }

// List returns the nine known labs and any other labs/NN-name
// directories, in order.
func List(ws *repo.Workspace) ([]Lab, error) {
	present := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(ws.Root, "labs"))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && DirName.MatchString(e.Name()) {
			present[e.Name()] = true
		}
	}
	names := append([]string{}, Known...)
	for name := range present {
		if !slices.Contains(Known, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	labs := make([]Lab, len(names))
	for i, n := range names {
		labs[i] = Lab{Name: n, Present: present[n]}
	}
	return labs, nil
}

// Find resolves a check argument: "1", "01", "01-timeouts" or
// "labs/01-timeouts/".
func Find(labs []Lab, arg string) (Lab, bool) {
	arg = strings.TrimSuffix(filepath.ToSlash(arg), "/")
	arg = strings.TrimPrefix(strings.TrimPrefix(arg, "./"), "labs/")
	if n, err := strconv.Atoi(arg); err == nil && n > 0 && n < 100 {
		arg = fmt.Sprintf("%02d", n)
	}
	for _, l := range labs {
		if l.Name == arg || l.Num() == arg {
			return l, true
		}
	}
	return Lab{}, false
}

// Files returns the slash paths (from the root) of a directory's .go
// files: the editable (non-test) ones and the test ones.
func Files(ws *repo.Workspace, dir string) (editable, tests []string, err error) {
	entries, err := os.ReadDir(filepath.Join(ws.Root, filepath.FromSlash(dir)))
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		if strings.HasSuffix(name, "_test.go") {
			tests = append(tests, path.Join(dir, name))
		} else {
			editable = append(editable, path.Join(dir, name))
		}
	}
	return editable, tests, nil
}

// TestSource is what the tool learns from a lab's _test.go files without
// compiling them.
type TestSource struct {
	Tests []string // top-level Test functions (TestMain excluded), in file then source order
	// Contract violations found in the source, each "file:line: what".
	ErrorText []string // errors classified by message text (clause 4)
	Sockets   []string // real sockets or test servers (clause 7)
	ParseErrs []string // syntax errors
	Imports   []string // the import paths of the test files, each once
}

// GameDayPackage is the package a capstone lab's tests import to play the
// game day, below the module path.
const GameDayPackage = "/internal/gameday"

// Capstone reports whether the lab's tests play the game day (import
// module's internal/gameday): lab 10, whose learner file is a plan, plain
// data. The contract's exceptions for it: clause 8 lets it depend on the
// solutions it composes, and clause 5 runs it without the race detector,
// which looks for data races in code, not in a value (the code a plan runs
// is tested under -race by clause 12); check runs it without -race too.
func (t TestSource) Capstone(module string) bool {
	return slices.Contains(t.Imports, module+GameDayPackage)
}

// parseTestSource reads the test files (slash paths from the root).
func parseTestSource(ws *repo.Workspace, files []string) TestSource {
	var src TestSource
	fset := token.NewFileSet()
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(ws.Root, filepath.FromSlash(rel)), nil, parser.SkipObjectResolution)
		if err != nil {
			src.ParseErrs = append(src.ParseErrs, err.Error())
			if f == nil {
				continue
			}
		}
		inspectTestFile(fset, rel, f, &src)
	}
	return src
}

func inspectTestFile(fset *token.FileSet, rel string, f *ast.File, src *TestSource) {
	// Local names of the imports we look for.
	local := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = p
		if !slices.Contains(src.Imports, p) {
			src.Imports = append(src.Imports, p)
		}
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if ok && fn.Recv == nil && isTestName(fn.Name.Name) {
			src.Tests = append(src.Tests, fn.Name.Name)
		}
	}
	pos := func(n ast.Node) string {
		p := fset.Position(n.Pos())
		return fmt.Sprintf("%s:%d", rel, p.Line)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		pkg, fun := selector(call.Fun)
		switch {
		case local[pkg] == "strings" && (fun == "Contains" || fun == "HasPrefix" || fun == "HasSuffix" || fun == "Index" || fun == "EqualFold") &&
			len(call.Args) > 0 && isErrorCall(call.Args[0]):
			src.ErrorText = append(src.ErrorText, fmt.Sprintf("%s: strings.%s(err.Error(), ...) classifies an error by its text; use errors.Is or errors.As", pos(call), fun))
		case local[pkg] == "net/http/httptest" && (fun == "NewServer" || fun == "NewTLSServer" || fun == "NewUnstartedServer"):
			src.Sockets = append(src.Sockets, fmt.Sprintf("%s: httptest.%s opens a real socket; use fooddelivery/memnet", pos(call), fun))
		case local[pkg] == "net" && (fun == "Listen" || fun == "ListenPacket" || fun == "Dial" || fun == "DialTimeout"):
			src.Sockets = append(src.Sockets, fmt.Sprintf("%s: net.%s uses a real socket; use fooddelivery/memnet", pos(call), fun))
		}
		return true
	})
}

// isTestName reports whether go test would run a function of this name as a
// test (TestMain excluded).
func isTestName(name string) bool {
	if !strings.HasPrefix(name, "Test") || name == "TestMain" {
		return false
	}
	if len(name) == 4 {
		return true
	}
	r, _ := utf8.DecodeRuneInString(name[4:])
	return !unicode.IsLower(r)
}

// selector returns "pkg", "Fun" for an expression pkg.Fun.
func selector(e ast.Expr) (string, string) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return id.Name, sel.Sel.Name
}

// isErrorCall reports whether e is a call x.Error() with no arguments.
func isErrorCall(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Error"
}

var (
	hintsLink      = regexp.MustCompile(`\]\((\./)?HINTS\.md(#[^)]*)?\)`)
	productionLink = regexp.MustCompile(`\]\((\./)?PRODUCTION\.md(#[^)]*)?\)`)
)

// NoLab is the usage error for a lab argument that names no lab here.
func NoLab(arg string, labs []Lab) error {
	var names []string
	for _, l := range labs {
		if l.Present {
			names = append(names, l.Name)
		}
	}
	return repo.BadUsage("no lab %q here; the labs are %s (a number is enough: 05)", arg, strings.Join(names, ", "))
}
