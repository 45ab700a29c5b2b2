package lab

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// SolutionLayout checks the solution directory and returns its files by
// base name (nil when it cannot be used).
func SolutionLayout(ws *repo.Workspace, solDir string, editable []string) (map[string]string, []string) {
	entries, err := os.ReadDir(ws.Abs(solDir))
	if err != nil {
		return nil, []string{fmt.Sprintf("%s is missing", solDir)}
	}
	var problems []string
	files := map[string]string{}
	var have, want []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			have = append(have, e.Name())
			files[e.Name()] = ws.Abs(path.Join(solDir, e.Name()))
		}
	}
	for _, f := range editable {
		want = append(want, path.Base(f))
	}
	sort.Strings(want)
	if !slices.Equal(have, want) {
		problems = append(problems, fmt.Sprintf("solution files are [%s], the lab's editable files are [%s]", strings.Join(have, " "), strings.Join(want, " ")))
	}
	_ = filepath.WalkDir(ws.Abs(solDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(ws.Root, p)
			problems = append(problems, filepath.ToSlash(rel)+": solutions have no tests (the lab's tests are the spec)")
		}
		return nil
	})
	if _, err := os.Stat(ws.Abs(path.Join(solDir, "NOTES.md"))); err != nil {
		problems = append(problems, solDir+"/NOTES.md is missing")
	}
	if len(files) == 0 {
		return nil, problems
	}
	return files, problems
}
