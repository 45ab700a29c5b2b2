package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// layers says which of the tool's packages each package may import
// (cmd/workshop/internal/<name>), from the bottom up: a package reaches
// only down, never up and never to main. testkit is for tests only.
var layers = map[string][]string{
	"gotest":   {},
	"i18n":     {},
	"term":     {},
	"testkit":  {},
	"repo":     {"gotest", "i18n"},
	"admin":    {"repo", "i18n"},
	"lab":      {"repo", "gotest", "i18n"},
	"labrun":   {"lab", "repo", "gotest", "term", "i18n"},
	"learner":  {"labrun", "lab", "repo", "gotest", "term", "i18n"},
	"class":    {"labrun", "lab", "repo", "gotest", "term", "i18n"},
	"doctor":   {"labrun", "lab", "repo", "gotest", "term", "i18n"},
	"contract": {"learner", "labrun", "lab", "repo", "gotest", "term", "i18n"},
}

// maxFileLines is the most lines a file of the tool may have.
const maxFileLines = 400

// TestPackageTree checks the shape of the tool's code: every package
// under internal/ has a package doc and a place in layers, imports only
// what its layer allows (its tests may add testkit), and no file is over
// maxFileLines lines.
func TestPackageTree(t *testing.T) {
	const internalPath = "github.com/gophereats/resilience/cmd/workshop/internal/"
	docs := map[string]int{} // package dir -> files with a package doc
	dirs := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if n := bytes.Count(src, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines; a file of the tool has at most %d: split it by what its parts do", p, n, maxFileLines)
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		name := path.Base(dir)
		if dir == "." {
			name = "main"
		}
		dirs[dir] = true
		if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+name+" ") ||
			name == "main" && f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Command workshop ") {
			docs[dir]++
		}
		allowed, known := layers[name]
		if !known && name != "main" {
			t.Errorf("%s: package %s has no place in layers (tree_test.go): say what it may import", p, name)
		}
		test := strings.HasSuffix(p, "_test.go")
		for _, imp := range f.Imports {
			ip := strings.Trim(imp.Path.Value, `"`)
			if ip == "github.com/gophereats/resilience/cmd/workshop" {
				t.Errorf("%s imports main", p)
			}
			dep, ok := strings.CutPrefix(ip, internalPath)
			if !ok || name == "main" {
				continue
			}
			switch {
			case dep == "testkit" && !test:
				t.Errorf("%s imports testkit, which only tests may import", p)
			case dep == "testkit":
			case !slices.Contains(allowed, dep):
				may := strings.Join(allowed, ", ")
				if may == "" {
					may = "none of the tool's packages"
				}
				t.Errorf("%s: package %s imports %s, which its layer does not allow (it may import %s)", p, name, dep, may)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for d := range dirs {
		list = append(list, d)
	}
	sort.Strings(list)
	for _, d := range list {
		if docs[d] != 1 {
			t.Errorf("%s: %d files carry the package doc, want exactly one (doc.go): it says what the package owns and what it must not know", d, docs[d])
		}
	}
	for name := range layers {
		if !dirs["internal/"+name] {
			t.Errorf("layers names %s, which has no directory under internal/", name)
		}
	}
}
