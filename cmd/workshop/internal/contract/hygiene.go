package contract

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// projectTestTimeout is the -timeout of each project test binary.
const projectTestTimeout = 10 * time.Minute

// projectParts are the project's checks, which verify runs side by side
// (and beside the labs) and reports in this order.
var projectParts = []string{"go vet, gofmt and go.mod", "go test (project)", "browser tests", "benchmarks"}

// verifyProject checks the project outside the labs: go vet, gofmt and
// go.mod (clause 11), go test (clause 12), the browser tests (clause 13)
// and the benchmarks (clause 14), each reported as a part to prog.
func verifyProject(ctx context.Context, ws *repo.Workspace, r *report, race bool, prog *progress) error {
	res := ws.GoCmd(ctx, 2*time.Minute, "list", "-e", "-f", "{{.ImportPath}}", "./...")
	if res.Err != nil {
		r.fail("go list ./...", "go list failed", res.Combined())
		for _, name := range projectParts {
			prog.skip(name)
		}
		return ctx.Err()
	}
	var vetPkgs, testPkgs []string
	for _, p := range strings.Fields(string(res.Stdout)) {
		if under(p, ws.Module+"/labs") {
			continue
		}
		vetPkgs = append(vetPkgs, p)
		if !under(p, ws.Module+"/solutions") {
			testPkgs = append(testPkgs, p)
		}
	}

	checks := []func(context.Context, *report) error{
		func(ctx context.Context, r *report) error {
			// go vet.
			what := fmt.Sprintf("clause %d: go vet (%d packages outside labs/)", clauseVetFmt, len(vetPkgs))
			if len(vetPkgs) > 0 {
				res := ws.GoCmd(ctx, 10*time.Minute, append([]string{"vet"}, vetPkgs...)...)
				if res.Err != nil {
					r.fail(what, "go vet found problems", res.Combined())
				} else {
					r.ok(what)
				}
			} else {
				r.ok(what)
			}

			// gofmt.
			files, problems := gofmtProblems(ctx, ws)
			r.check(fmt.Sprintf("clause %d: gofmt (%d files outside labs/ and testdata)", clauseVetFmt, files), problems)

			// go.mod tidy.
			problems, note := tidyProblems(ctx, ws)
			if note != "" {
				r.note(note)
			}
			r.check(fmt.Sprintf("clause %d: go.mod is tidy (go mod tidy -diff)", clauseVetFmt), problems)

			// The German edition of the project's texts.
			if texts := germanProjectTexts(ws); len(texts) > 0 {
				r.check(fmt.Sprintf("clause %d: %s translate %s section by section, in sync", clauseGerman,
					strings.Join(germanNames(texts), " and "), strings.Join(texts, " and ")), germanProjectProblems(ws, texts))
			}

			// The GitHub workflows.
			if what, problems, note := workflowProblems(ctx, ws); note != "" {
				r.note(note)
			} else if what != "" {
				r.check(what, problems)
			}
			// compose.yaml, without Docker.
			if what, problems, note := composeFileProblems(ctx, ws); note != "" {
				r.note(note)
			} else if what != "" {
				r.check(what, problems)
			}
			if len(testPkgs) == 0 {
				r.note("no packages to test outside labs/ and solutions/")
			}
			return ctx.Err()
		},
	}
	if len(testPkgs) == 0 {
		for _, name := range projectParts[1:] {
			prog.skip(name)
		}
	} else {
		checks = append(checks,
			func(ctx context.Context, r *report) error {
				return projectTests(repo.WithPriority(ctx, prioProjectTests), ws, r, race, testPkgs)
			},
			func(ctx context.Context, r *report) error {
				return verifyBrowser(repo.WithPriority(ctx, prioBrowser), ws, r)
			},
			func(ctx context.Context, r *report) error { return verifyBench(ctx, ws, r) },
		)
	}
	return inOrder(ctx, r, len(checks), func(ctx context.Context, i int, r *report) error {
		prog.begin(projectParts[i])
		defer prog.end(projectParts[i])
		return checks[i](ctx, r)
	})
}

// projectTests (clause 12) runs the project's tests in one go test and
// reports each package.
func projectTests(ctx context.Context, ws *repo.Workspace, r *report, race bool, testPkgs []string) error {
	args := []string{}
	flags := ""
	if race {
		args = append(args, "-race")
		flags = " -race"
	}
	run, res := ws.GoTest(ctx, projectTestTimeout, append(args, testPkgs...)...)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	failedBefore := r.failed
	for _, p := range testPkgs {
		pkg := run.Packages[p]
		if pkg == nil || pkg.Action == "skip" {
			continue // never started (reported below) or no test files
		}
		what := fmt.Sprintf("clause %d: go test%s %s", clauseProjectTests, flags, p)
		switch {
		case pkg.BuildFailed:
			r.fail(what, "does not compile", pkg.BuildErrors())
		case pkg.Action == "pass":
			r.ok(what)
		default:
			var detail []string
			names := make([]string, 0, len(pkg.Tests))
			for n := range pkg.Tests {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				t := pkg.Tests[n]
				if t.Action == "fail" || t.Action == "" {
					detail = append(detail, n+" failed:")
					for _, line := range repo.FirstLines(t.FailureLines(), 8) {
						detail = append(detail, "    "+line)
					}
				}
			}
			if len(detail) == 0 {
				detail = pkg.Output
			}
			r.fail(what, "tests fail", detail)
		}
	}
	// go test failed, but no package's result says why (it stopped before
	// some packages started, say): that is a failure too, never a pass.
	if res.Err != nil && r.failed == failedBefore {
		detail := append(append([]string{res.Err.Error()}, run.Other...), repo.SplitLines(string(res.Stderr))...)
		r.fail(fmt.Sprintf("clause %d: go test%s (project)", clauseProjectTests, flags), "go test failed", detail)
	}
	return nil
}

// browserTestDir is the nested module of the browser tests: it has its own
// go.mod, so learners never download chromedp.
const browserTestDir = "internal/browsertest"

// chromiumNames are the commands the browser tests can drive.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// verifyBrowser runs the browser tests of browserTestDir when a Chromium
// is installed, and says how to enable them when not.
func verifyBrowser(ctx context.Context, ws *repo.Workspace, r *report) error {
	if _, err := os.Stat(filepath.Join(ws.Root, browserTestDir, "go.mod")); err != nil {
		return nil
	}
	found := ""
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			found = p
			break
		}
	}
	if found == "" {
		r.note("browser tests skipped: no Chromium on PATH (" + strings.Join(chromiumNames, ", ") +
			"); on Debian, apt-get install chromium enables them")
		return nil
	}
	what := fmt.Sprintf("clause %d: browser tests (%s, %s)", clauseBrowser, browserTestDir, filepath.Base(found))
	res := ws.GoCmd(ctx, 15*time.Minute, "-C", browserTestDir, "test", "-count=1", "-timeout", "10m", "./...")
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if res.Err != nil {
		r.fail(what, "tests fail", res.Combined())
		return nil
	}
	r.ok(what)
	return nil
}

// under reports whether import path p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// gofmtProblem says what to do about a file gofmt -l listed: a file with
// CRLF line endings (a Windows checkout made before .gitattributes, or an
// editor set to CRLF) gets its own advice.
func gofmtProblem(abs, rel string) string {
	if data, err := os.ReadFile(abs); err == nil && lab.HasCRLF(data) {
		return fmt.Sprintf("%s has CRLF line endings; gofmt wants LF. .gitattributes checks Go files out with LF, "+
			"so this file was converted by an older checkout or an editor: run gofmt -w %s (it writes LF) and set your editor to LF for .go files",
			filepath.ToSlash(rel), rel)
	}
	return filepath.ToSlash(rel) + " is not gofmt'ed (run gofmt -w " + rel + ")"
}

// gofmtProblems runs gofmt -l over the .go files outside labs/ and testdata
// directories; it returns how many files it checked.
func gofmtProblems(ctx context.Context, ws *repo.Workspace) (int, []string) {
	env, err := ws.GoEnv(ctx, "GOROOT")
	if err != nil {
		return 0, []string{err.Error()}
	}
	gofmt := filepath.Join(env["GOROOT"], "bin", "gofmt")
	if runtime.GOOS == "windows" {
		gofmt += ".exe"
	}
	var files []string
	err = filepath.WalkDir(ws.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws.Root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (rel == "labs" || base == "testdata" || base == "vendor" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return 0, []string{err.Error()}
	}
	var problems []string
	const batch = 100
	for start := 0; start < len(files); start += batch {
		part := files[start:min(start+batch, len(files))]
		args := []string{"-l"}
		for _, f := range part {
			args = append(args, filepath.FromSlash(f))
		}
		res := ws.RunCmd(ctx, 2*time.Minute, gofmt, args...)
		for _, line := range repo.SplitLines(string(res.Stdout)) {
			problems = append(problems, gofmtProblem(filepath.Join(ws.Root, line), line))
		}
		if res.Err != nil {
			problems = append(problems, repo.SplitLines(string(res.Stderr))...)
		}
	}
	return len(files), problems
}
