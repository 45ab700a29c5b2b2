package tracing

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// constants returns the string constants names.go declares, by name.
func constants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out[n.Name] = v
				}
			}
		}
	}
	return out
}

// Every event and attribute name is in doc.go's list, every event is
// recorded somewhere in the system's code, and no code outside this
// package records an event by a literal name.
func TestNamesAreListed(t *testing.T) {
	names := constants(t)
	if len(names) < 20 {
		t.Fatalf("names.go declares %d names; the parse found too few to check", len(names))
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range names {
		if strings.HasPrefix(name, "Span") {
			continue // formats: the list gives them as patterns
		}
		if !strings.Contains(string(doc), "//\t"+v+" ") {
			t.Errorf("%s = %q is not in doc.go's list of names: add a line for it", name, v)
		}
	}

	// The system's code (this package's own files but names.go): which
	// constants it uses, and any event recorded by a literal outside here.
	used := map[string]bool{}
	root := filepath.Join("..", "..", "..")
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "labs" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		if err != nil {
			return nil
		}
		dir, _ := filepath.Abs(filepath.Dir(path))
		inPkg := dir == here && filepath.Base(path) != "names.go"
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "tracing" {
					used[n.Sel.Name] = true
				}
			case *ast.Ident:
				if inPkg {
					used[n.Name] = true
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || len(n.Args) == 0 || (sel.Sel.Name != "AddEvent" && !(sel.Sel.Name == "Event" && isIdent(sel.X, "tracing"))) {
					return true
				}
				arg := n.Args[0]
				if sel.Sel.Name == "Event" {
					if len(n.Args) < 2 {
						return true
					}
					arg = n.Args[1]
				}
				if _, lit := arg.(*ast.BasicLit); lit {
					t.Errorf("%s records an event by the literal %s: name it with a constant of package tracing (names.go), and list it in doc.go", path, exprText(src, arg))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range names {
		if strings.HasPrefix(name, "Event") && !used[name] {
			t.Errorf("%s (%q) is listed but nothing records it: record it where its pattern decides, or drop it from names.go and doc.go", name, names[name])
		}
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func exprText(src []byte, e ast.Expr) string {
	return string(src[e.Pos()-1 : e.End()-1])
}
