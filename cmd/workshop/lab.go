package main

import (
	"bufio"
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
)

// knownLabs are the workshop's labs in order; the ones without a directory
// are shown as coming soon.
var knownLabs = []string{
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

// labDirName matches a lab directory name and captures its number.
var labDirName = regexp.MustCompile(`^([0-9]{2})-[a-z0-9][a-z0-9-]*$`)

// lab is one lab, present or not.
type lab struct {
	Name    string // directory name, "01-timeouts"
	Present bool   // labs/<Name> exists
}

// Num returns the lab's number as written, "01".
func (l lab) Num() string { return l.Name[:2] }

// Title returns the lab's name without its number, "timeouts".
func (l lab) Title() string { return l.Name[3:] }

// Dir returns the lab's slash path from the repository root.
func (l lab) Dir() string { return "labs/" + l.Name }

// Pattern returns the go package pattern for the lab, "./labs/01-timeouts/".
func (l lab) Pattern() string { return "./labs/" + l.Name + "/" }

// listLabs returns the nine known labs and any other labs/NN-name
// directories, in order.
func (ws *workspace) listLabs() ([]lab, error) {
	present := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(ws.root, "labs"))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && labDirName.MatchString(e.Name()) {
			present[e.Name()] = true
		}
	}
	names := append([]string{}, knownLabs...)
	for name := range present {
		if !slices.Contains(knownLabs, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	labs := make([]lab, len(names))
	for i, n := range names {
		labs[i] = lab{Name: n, Present: present[n]}
	}
	return labs, nil
}

// findLab resolves a check argument: "1", "01", "01-timeouts" or
// "labs/01-timeouts/".
func findLab(labs []lab, arg string) (lab, bool) {
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
	return lab{}, false
}

// labFiles returns the slash paths (from the root) of a directory's .go
// files: the editable (non-test) ones and the test ones.
func (ws *workspace) labFiles(dir string) (editable, tests []string, err error) {
	entries, err := os.ReadDir(filepath.Join(ws.root, filepath.FromSlash(dir)))
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

// testSource is what the tool learns from a lab's _test.go files without
// compiling them.
type testSource struct {
	Tests []string // top-level Test functions (TestMain excluded), in file then source order
	// Contract violations found in the source, each "file:line: what".
	ErrorText []string // errors classified by message text (clause 3)
	Sockets   []string // real sockets or test servers (clause 7)
	ParseErrs []string // syntax errors
	Imports   []string // the import paths of the test files, each once
}

// gameDayPackage is the package a capstone lab's tests import to play the
// game day, below the module path.
const gameDayPackage = "/internal/gameday"

// capstone reports whether the lab's tests play the game day (import
// module's internal/gameday): lab 10, whose learner file is a plan, plain
// data. The contract's exceptions for it: clause 8 lets it depend on the
// solutions it composes, and clause 5 runs it without the race detector,
// which looks for data races in code, not in a value (the code a plan runs
// is tested under -race by clause 12); check runs it without -race too.
func (t testSource) capstone(module string) bool {
	return slices.Contains(t.Imports, module+gameDayPackage)
}

// parseTestSource reads the test files (slash paths from the root).
func (ws *workspace) parseTestSource(files []string) testSource {
	var src testSource
	fset := token.NewFileSet()
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(ws.root, filepath.FromSlash(rel)), nil, parser.SkipObjectResolution)
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

func inspectTestFile(fset *token.FileSet, rel string, f *ast.File, src *testSource) {
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

// readme is what the tool reads from a lab's README.md.
type readme struct {
	Sections []string       // level-2 headings, in order
	Steps    map[int]string // step number -> title, from "### Step N: title" under "## Steps"
	Anchors  map[int]string // step number -> GitHub anchor of its heading
	Order    []int          // step numbers in the order they appear
	// HintsLink reports whether the "## Hints" section links to HINTS.md
	// (a Markdown link "](HINTS.md)" or "](./HINTS.md)", with or without an anchor).
	HintsLink bool
	// ProductionLink reports whether the "## In production" section links
	// to PRODUCTION.md, the same way.
	ProductionLink bool
	// Words counts the words of each level-2 section ("" for the text
	// before the first one), headings included: whitespace-separated
	// tokens outside fenced code blocks and tables (lines starting with
	// "|" whose second line is a delimiter row), markup such as "###"
	// not counted.
	Words map[string]int
}

var (
	hintsLink      = regexp.MustCompile(`\]\((\./)?HINTS\.md(#[^)]*)?\)`)
	productionLink = regexp.MustCompile(`\]\((\./)?PRODUCTION\.md(#[^)]*)?\)`)
)

var stepHeading = regexp.MustCompile(`(?i)^step\s+([0-9]+)\s*(?:[:.)]|-|–|—)?\s*(.*)$`)

// fence is a Markdown code fence: a run of at least three backticks or
// tildes (CommonMark). The zero fence is no fence.
type fence struct {
	char byte
	n    int
}

// fenceOf returns the fence a trimmed line begins with, or the zero fence.
// A backtick fence's info string holds no backtick, so "```a``` text" is
// inline code, not a fence.
func fenceOf(trimmed string) fence {
	if trimmed == "" || trimmed[0] != '`' && trimmed[0] != '~' {
		return fence{}
	}
	c := trimmed[0]
	n := 0
	for n < len(trimmed) && trimmed[n] == c {
		n++
	}
	if n < 3 || c == '`' && strings.Contains(trimmed[n:], "`") {
		return fence{}
	}
	return fence{c, n}
}

// indentOf returns the columns of white space a line begins with, a tab
// advancing to the next multiple of four (CommonMark).
func indentOf(line string) int {
	col := 0
	for _, c := range line {
		switch c {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col
		}
	}
	return col
}

// fenceLine returns the fence a line opens, or the zero fence. Indented by
// four columns or more, a run of backticks is a paragraph's continuation
// or indented code, not a fence (CommonMark).
func fenceLine(line string) fence {
	if indentOf(line) > 3 {
		return fence{}
	}
	return fenceOf(strings.TrimSpace(line))
}

// closesLine reports whether line closes the fence f: indented by at
// most three columns, as a fence must be, the same character, at least as
// many, and nothing after them.
func (f fence) closesLine(line string) bool {
	trimmed := strings.TrimSpace(line)
	g := fenceOf(trimmed)
	return indentOf(line) <= 3 && g.char == f.char && g.n >= f.n && strings.Trim(trimmed, string(f.char)) == ""
}

// htmlBlockStart matches the first line of an HTML block of CommonMark's
// sixth kind (a block-level tag), which runs to the next blank line: its
// text is shown, and a run of backticks inside it opens no code block.
var htmlBlockStart = regexp.MustCompile(`(?i)^ {0,3}</?(address|article|aside|blockquote|center|details|dialog|div|dl|fieldset|figcaption|figure|footer|form|header|main|nav|ol|p|section|summary|table|tbody|td|tfoot|th|thead|tr|ul)(\s|/?>|$)`)

// htmlTag matches an HTML tag, which shows no words.
var htmlTag = regexp.MustCompile(`<[^>]*>`)

// tableDelimiter matches a table's delimiter row, "|---|:--:|".
var tableDelimiter = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)

// parseReadme reads headings outside fenced code blocks.
func parseReadme(text string) readme {
	r := readme{Steps: map[int]string{}, Anchors: map[int]string{}, Words: map[string]int{}}
	var open fence  // the fence of the code block we are in, if any
	inHTML := false // in an HTML block, which ends at a blank line
	section := ""
	// A line starting with "|" is a table row only when a delimiter row
	// follows its first row; until then its words wait in pending.
	inTable, header, pending := false, false, 0
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		if open.n > 0 {
			if open.closesLine(line) {
				open = fence{}
			}
			continue
		}
		if inHTML || htmlBlockStart.MatchString(line) {
			inHTML = trimmed != ""
			r.Words[section] += pending + len(strings.Fields(htmlTag.ReplaceAllString(line, " ")))
			inTable, header, pending = false, false, 0
			continue
		}
		if f := fenceLine(line); f.n > 0 {
			open = f
			continue
		}
		isRow := strings.HasPrefix(trimmed, "|")
		switch {
		case isRow && inTable:
		case isRow && header && tableDelimiter.MatchString(trimmed):
			inTable, header, pending = true, false, 0 // the pending row was a table's header
		case isRow:
			r.Words[section] += pending // a "|" line that began no table is prose
			header, pending = true, len(strings.Fields(trimmed))
		default:
			r.Words[section] += pending
			inTable, header, pending = false, false, 0
		}
		if isRow {
			continue
		}
		if strings.HasPrefix(line, "## ") {
			section = headingText(line[3:])
			r.Sections = append(r.Sections, section)
		}
		r.Words[section] += len(strings.Fields(strings.TrimLeft(trimmed, "#")))
		switch {
		case strings.EqualFold(section, "Hints") && hintsLink.MatchString(line):
			r.HintsLink = true
		case strings.EqualFold(section, "In production") && productionLink.MatchString(line):
			r.ProductionLink = true
		case strings.HasPrefix(line, "### ") && strings.EqualFold(section, "Steps"):
			h := headingText(line[4:])
			m := stepHeading.FindStringSubmatch(h)
			if m == nil {
				continue
			}
			n, err := strconv.Atoi(m[1])
			if err != nil {
				continue
			}
			if _, dup := r.Steps[n]; !dup {
				r.Order = append(r.Order, n)
			}
			r.Steps[n] = strings.TrimSpace(m[2])
			r.Anchors[n] = githubAnchor(h)
		}
	}
	r.Words[section] += pending
	return r
}

// headingText trims a heading's text and its optional closing #s.
func headingText(s string) string {
	s = strings.TrimSpace(s)
	if t := strings.TrimRight(s, "#"); t != s && strings.HasSuffix(t, " ") {
		s = strings.TrimSpace(t)
	}
	return s
}

// githubAnchor returns the anchor GitHub gives a heading: lower case,
// punctuation removed, spaces turned into hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// readmeSections are the level-2 sections every lab README has, in order.
// The last two only link to HINTS.md and PRODUCTION.md.
var readmeSections = []string{"The story", "The pattern", "Steps", "Hints", "Experiment", "In production"}

// Word limits of a lab README (clause 9), counted as readme.Words does:
// everything but the two link sections is what a learner reads before
// and while solving the lab, in about ten minutes at 200 words a minute.
const (
	readmeWordLimit      = 2000
	linkSectionWordLimit = 60 // "## Hints" and "## In production": a sentence and a link
)

// missingSections returns the required sections that are missing or out of
// order (extra sections in between are allowed).
func missingSections(have []string) []string {
	var missing []string
	i := 0
	for _, want := range readmeSections {
		j := i
		for j < len(have) && !strings.EqualFold(have[j], want) {
			j++
		}
		if j == len(have) {
			missing = append(missing, want)
			continue
		}
		i = j + 1
	}
	return missing
}
