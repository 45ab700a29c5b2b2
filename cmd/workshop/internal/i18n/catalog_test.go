package i18n

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// speakers are the packages whose messages go through a Printer.
var speakers = []string{"../learner", "../lab", "../labrun"}

// messages returns every constant message given to a Printer's method in
// the speakers' non-test files, with where it is.
func messages(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	methods := map[string]int{"Sprintf": 0, "Errorf": 0, "Text": 0, "Fprintf": 1, "Fprintln": 1}
	for _, dir := range speakers {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				arg, ok := methods[sel.Sel.Name]
				if !ok || !isPrinter(sel.X) || len(call.Args) <= arg {
					return true
				}
				if lit, ok := call.Args[arg].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					if err == nil {
						out[s] = fset.Position(lit.Pos()).String()
					}
				}
				return true
			})
		}
	}
	return out
}

// isPrinter reports whether x names a Printer as the speakers do: p,
// ws.P, info.P, o.Info.P.
func isPrinter(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name == "p"
	case *ast.SelectorExpr:
		return x.Sel.Name == "P"
	}
	return false
}

// words matches a message that has something to translate.
var words = regexp.MustCompile(`[A-Za-z]{2,}`)

// Every message the learner's commands print has its German, with the
// same verbs in the same order, and the catalog holds nothing else.
func TestGermanCatalogIsComplete(t *testing.T) {
	msgs := messages(t)
	if len(msgs) < 80 {
		t.Fatalf("found %d messages in %v: the scan is broken", len(msgs), speakers)
	}
	var missing []string
	for m, at := range msgs {
		if !words.MatchString(strings.ReplaceAll(m, "%s", "")) {
			continue
		}
		de, ok := german[m]
		if !ok {
			missing = append(missing, at+": "+strconv.Quote(m))
			continue
		}
		if verbs(de) != verbs(m) {
			t.Errorf("%s: the German %q has the verbs %q, the English %q has %q", at, de, verbs(de), m, verbs(m))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no German for %s", m)
	}
	for m := range german {
		if _, used := msgs[m]; !used && !usedElsewhere[m] {
			t.Errorf("the German catalog has %q, which no speaker prints", m)
		}
	}
	if os.Getenv("I18N_DUMP") != "" {
		for _, m := range missing {
			t.Log(m)
		}
	}
}

// verb matches a format verb.
var verb = regexp.MustCompile(`%[-+# 0]*[0-9]*(?:\.[0-9]+)?[a-zA-Z%]`)

// verbs lists a format's verbs, in order, without their widths (German
// words are longer).
func verbs(format string) string {
	var out []string
	for _, v := range verb.FindAllString(format, -1) {
		out = append(out, "%"+v[len(v)-1:])
	}
	return strings.Join(out, " ")
}

func TestChoose(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		flag string
		env  func(string) string
		want string
	}{
		{"", env(), "en"},
		{"de", env(), "de"},
		{"DE", env(), "de"},
		{"en", env(EnvVar, "de"), "en"},
		{"", env(EnvVar, "de"), "de"},
		{"", env("LANG", "de_DE.UTF-8"), "de"},
		{"", env("LANG", "de_AT"), "de"},
		{"", env("LC_ALL", "C", "LANG", "de_DE.UTF-8"), "en"},
		{"", env("LC_MESSAGES", "de_CH.UTF-8", "LANG", "en_US.UTF-8"), "de"},
		{"", env("LANG", "fr_FR.UTF-8"), "en"},
	} {
		if got, err := Choose(c.flag, c.env); err != nil || got != c.want {
			t.Errorf("Choose(%q, ...) = %q, %v; want %q", c.flag, got, err, c.want)
		}
	}
	for _, c := range []struct{ flag, env string }{{"fr", ""}, {"", "klingon"}, {"de-DE", ""}} {
		_, err := Choose(c.flag, env(EnvVar, c.env))
		if err == nil || !strings.Contains(err.Error(), "the workshop speaks en (English) and de (Deutsch)") {
			t.Errorf("Choose(%q) with %s=%q: got %v, want an error listing the languages", c.flag, EnvVar, c.env, err)
		}
	}
}

func TestPrinter(t *testing.T) {
	var en *Printer
	if got := en.Sprintf("step %d: %s", 2, "x"); got != "step 2: x" {
		t.Errorf("nil Printer: %q", got)
	}
	de := New("de")
	if got := de.Sprintf("step %d: %s", 2, "Den Host prüfen"); got != "Schritt 2: Den Host prüfen" {
		t.Errorf("German: %q", got)
	}
	if got := de.Text("a message nobody translated"); got != "a message nobody translated" {
		t.Errorf("German falls back to English: %q", got)
	}
	if New("xx").Lang() != "en" || de.Lang() != "de" || en.Lang() != "en" {
		t.Error("Lang")
	}
}
