package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// The inspections of a lab's files that clauses 3, 5, 8 and 9 report.

// stepNameProblems checks clause 3's naming rules on the test source.
func stepNameProblems(src testSource) []string {
	problems := append([]string{}, src.ParseErrs...)
	steps := map[int][]string{}
	for _, t := range src.Tests {
		if stepOf(t) == 0 {
			problems = append(problems, fmt.Sprintf("%s does not match ^TestStep[0-9]+[A-Z]", t))
			continue
		}
		steps[stepOf(t)] = append(steps[stepOf(t)], t)
	}
	if len(steps) == 0 {
		return append(problems, "no TestStep tests")
	}
	last := 0
	for n := range steps {
		last = max(last, n)
	}
	for n := 1; n <= last; n++ {
		if len(steps[n]) == 0 {
			problems = append(problems, fmt.Sprintf("step %d has no test (steps go 1..%d without gaps)", n, last))
		}
	}
	if !slices.Contains(steps[last], fmt.Sprintf("TestStep%dExperiment", last)) {
		problems = append(problems, fmt.Sprintf("the last step has no TestStep%dExperiment", last))
	}
	for n := 1; n < last; n++ {
		if exp := fmt.Sprintf("TestStep%dExperiment", n); slices.Contains(steps[n], exp) {
			problems = append(problems, fmt.Sprintf("%s is not in the last step (%d)", exp, last))
		}
	}
	return problems
}

// solutionLayout checks the solution directory and returns its files by
// base name (nil when it cannot be used).
func (ws *workspace) solutionLayout(solDir string, editable []string) (map[string]string, []string) {
	entries, err := os.ReadDir(ws.abs(solDir))
	if err != nil {
		return nil, []string{fmt.Sprintf("%s is missing", solDir)}
	}
	var problems []string
	files := map[string]string{}
	var have, want []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			have = append(have, e.Name())
			files[e.Name()] = ws.abs(path.Join(solDir, e.Name()))
		}
	}
	for _, f := range editable {
		want = append(want, path.Base(f))
	}
	sort.Strings(want)
	if !slices.Equal(have, want) {
		problems = append(problems, fmt.Sprintf("solution files are [%s], the lab's editable files are [%s]", strings.Join(have, " "), strings.Join(want, " ")))
	}
	_ = filepath.WalkDir(ws.abs(solDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(ws.root, p)
			problems = append(problems, filepath.ToSlash(rel)+": solutions have no tests (the lab's tests are the spec)")
		}
		return nil
	})
	if _, err := os.Stat(ws.abs(path.Join(solDir, "NOTES.md"))); err != nil {
		problems = append(problems, solDir+"/NOTES.md is missing")
	}
	if len(files) == 0 {
		return nil, problems
	}
	return files, problems
}

// importProblems lists imports of other labs or of solutions (clause 8).
func (ws *workspace) importProblems(ctx context.Context, l lab, overlay string) []string {
	args := append([]string{"list", "-e", "-json"}, overlayArgs(overlay)...)
	res := ws.goCmd(ctx, 2*time.Minute, append(args, l.Pattern())...)
	if res.err != nil {
		return append([]string{"go list failed"}, res.combined()...)
	}
	var pkg struct {
		ImportPath                               string
		Imports, TestImports, XTestImports, Deps []string
	}
	if err := json.Unmarshal(res.stdout, &pkg); err != nil {
		return []string{"go list: " + err.Error()}
	}
	labs, sols := ws.module+"/labs/", ws.module+"/solutions"
	var problems []string
	seen := map[string]bool{}
	for _, list := range [][]string{pkg.Imports, pkg.TestImports, pkg.XTestImports, pkg.Deps} {
		for _, imp := range list {
			bad := (strings.HasPrefix(imp, labs) && imp != pkg.ImportPath) || imp == sols || strings.HasPrefix(imp, sols+"/")
			if bad && !seen[imp] {
				seen[imp] = true
				problems = append(problems, "imports "+imp)
			}
		}
	}
	return problems
}

// readmeProblems checks the README's sections and step headings.
func (ws *workspace) readmeProblems(info labInfo) []string {
	if _, err := os.Stat(ws.abs(path.Join(info.Dir(), "README.md"))); err != nil {
		return []string{info.Dir() + "/README.md is missing"}
	}
	var problems []string
	if missing := missingSections(info.Readme.Sections); len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("missing or out of order: ## %s (want, in order: %s; found: %s)",
			strings.Join(missing, ", ## "), strings.Join(readmeSections, ", "), strings.Join(info.Readme.Sections, ", ")))
	}
	testSteps := map[int]bool{}
	for _, t := range info.Tests.Tests {
		if n := stepOf(t); n > 0 {
			testSteps[n] = true
		}
	}
	for _, n := range info.Steps {
		_, inReadme := info.Readme.Steps[n]
		switch {
		case testSteps[n] && !inReadme:
			problems = append(problems, fmt.Sprintf("no \"### Step %d: title\" heading under ## Steps", n))
		case !testSteps[n] && inReadme:
			problems = append(problems, fmt.Sprintf("\"### Step %d\" has no TestStep%d test", n, n))
		}
	}
	return problems
}

// hintsProblems checks the lab's HINTS.md (clause 9): it exists and
// parses, its steps are steps with tests, every hint has a body (the
// parser checks that), and the README's Hints section links to it.
func (ws *workspace) hintsProblems(info labInfo) []string {
	hints, problems, err := ws.readHints(info.lab)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%s/HINTS.md is missing", info.Dir())
		}
		problems = append(problems, err.Error())
	}
	testSteps := map[int]bool{}
	for _, t := range info.Tests.Tests {
		if n := stepOf(t); n > 0 {
			testSteps[n] = true
		}
	}
	for _, s := range hints.Steps {
		if !testSteps[s.N] {
			problems = append(problems, fmt.Sprintf("%s/HINTS.md:%d: \"## Step %d\" has no TestStep%d test", info.Dir(), s.Line, s.N, s.N))
		}
	}
	if !info.Readme.HintsLink {
		problems = append(problems, "README.md's ## Hints section does not link to HINTS.md (\"[HINTS.md](HINTS.md)\")")
	}
	return problems
}
