package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// tidyProblems (clause 11) says what keeps go.mod from being tidy. It
// runs `go mod tidy -diff`, which needs every module of the build list's
// tests in the module cache and so, on a fresh machine, the network; when
// that cannot run, it checks offline what it can: that go.mod's direct
// requirements are exactly the modules the repository's packages and
// their tests import on this platform (the rest marked // indirect). note
// is set when only the offline check ran, or when neither could.
func tidyProblems(ctx context.Context, ws *repo.Workspace) (problems []string, note string) {
	// Never the network: like the benchmarks, verify uses what is in the
	// module cache.
	res := ws.RunCmdEnv(ctx, 3*time.Minute, []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off"}, ws.GoBin, "mod", "tidy", "-diff")
	switch {
	case res.Err == nil:
		return nil, ""
	case ctx.Err() != nil:
		return nil, ""
	case len(res.Stdout) > 0: // the diff: go.mod or go.sum is not tidy
		return append([]string{"go mod tidy would change go.mod or go.sum (run go mod tidy):"}, repo.FirstLines(repo.SplitLines(string(res.Stdout)), 30)...), ""
	}
	why := res.Err.Error()
	if lines := repo.SplitLines(string(res.Stderr)); len(lines) > 0 {
		why = strings.TrimSpace(lines[len(lines)-1])
	}
	problems, err := directProblems(ctx, ws)
	if err != nil {
		return nil, "go.mod not checked: go mod tidy -diff could not run here (" + why + "), nor the offline check (" + err.Error() + ")"
	}
	return problems, "go mod tidy -diff could not run here (" + why + "); checked offline that go.mod's direct requirements are the modules the code imports"
}

// directProblems compares go.mod's requirements with the modules that the
// main module's packages (tests included) import, offline: a module
// imported directly must be required without // indirect, and a module
// required without // indirect must be imported.
func directProblems(ctx context.Context, ws *repo.Workspace) ([]string, error) {
	res := ws.RunCmdEnv(ctx, 2*time.Minute, offline, ws.GoBin, "mod", "edit", "-json")
	if res.Err != nil {
		return nil, fmt.Errorf("go mod edit -json: %v %s", res.Err, strings.TrimSpace(string(res.Stderr)))
	}
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := json.Unmarshal(res.Stdout, &mod); err != nil {
		return nil, fmt.Errorf("go mod edit -json: %v", err)
	}
	res = ws.RunCmdEnv(ctx, 2*time.Minute, offline, ws.GoBin, "list", "-e", "-f",
		`{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}{{"\n"}}{{join .XTestImports "\n"}}`, "./...")
	if res.Err != nil {
		return nil, fmt.Errorf("go list ./...: %v %s", res.Err, strings.TrimSpace(string(res.Stderr)))
	}
	seen := map[string]bool{}
	var imports []string
	for _, p := range strings.Fields(string(res.Stdout)) {
		first, _, _ := strings.Cut(p, "/")
		if !seen[p] && strings.Contains(first, ".") && !under(p, ws.Module) {
			seen[p] = true
			imports = append(imports, p)
		}
	}
	direct := map[string]string{} // module -> one package of it imported
	if len(imports) > 0 {
		res = ws.RunCmdEnv(ctx, 2*time.Minute, offline, ws.GoBin,
			append([]string{"list", "-e", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}"}, imports...)...)
		if res.Err != nil {
			return nil, fmt.Errorf("go list: %v %s", res.Err, strings.TrimSpace(string(res.Stderr)))
		}
		for _, line := range repo.SplitLines(string(res.Stdout)) {
			pkg, m, _ := strings.Cut(line, " ")
			if m == "" { // not in the module cache: no verdict on its module
				return nil, fmt.Errorf("%s is not in the module cache (go mod download fetches it)", pkg)
			}
			if _, dup := direct[m]; !dup {
				direct[m] = pkg
			}
		}
	}
	var problems []string
	required := map[string]bool{}
	for _, r := range mod.Require {
		required[r.Path] = true
		pkg, imported := direct[r.Path]
		switch {
		case r.Indirect && imported:
			problems = append(problems, fmt.Sprintf("go.mod marks %s // indirect, but %s is imported: move it to the first require block (go mod tidy does)", r.Path, pkg))
		case !r.Indirect && !imported:
			problems = append(problems, fmt.Sprintf("go.mod requires %s directly, but no package imports it: mark it // indirect or drop it (go mod tidy does)", r.Path))
		}
	}
	for m, pkg := range direct {
		if !required[m] {
			problems = append(problems, fmt.Sprintf("%s is imported, but go.mod does not require %s (go get %s)", pkg, m, m))
		}
	}
	sort.Strings(problems)
	return problems, nil
}
