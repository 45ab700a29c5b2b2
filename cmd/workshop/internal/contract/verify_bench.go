package contract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// benchDir is the nested module of the benchmarks that measure the
// references beside the libraries a production service would use (clause
// 14). It has its own go.mod, so learners never download those libraries.
const benchDir = "internal/bench"

// benchFetch is the command that downloads benchDir's modules.
const benchFetch = "go -C " + benchDir + " mod download"

// offline makes the go command fail rather than download a module, and
// keeps a go.work or GOFLAGS of the learner's (a workspace, -mod=vendor)
// from changing which modules benchDir builds with.
var offline = []string{"GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=readonly"}

// verifyBench runs every benchmark of benchDir once, and its tests
// (clause 14): each benchmark checks that it measured the success path it
// names and fails with a message otherwise; the tests keep what a
// benchmark copies (lab 03's unexported draw) the same as the reference. verify never downloads them: when the module's
// dependencies are not all in the module cache, it skips them with a note
// saying how to fetch them.
func verifyBench(ctx context.Context, ws *repo.Workspace, r *report) error {
	if _, err := os.Stat(filepath.Join(ws.Root, benchDir, "go.mod")); err != nil {
		return nil
	}
	if why := uncachedModule(ctx, ws, benchDir); why != "" {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note(fmt.Sprintf("benchmarks skipped: %s; %s fetches them", why, benchFetch))
		return nil
	}
	what := fmt.Sprintf("clause %d: every benchmark runs its success path, and the tests beside them pass (%s, -benchtime 1x)", clauseBench, benchDir)
	res := ws.RunCmdEnv(ctx, 12*time.Minute, offline, ws.GoBin, "-C", benchDir,
		"test", "-count=1", "-timeout", "10m", "-bench", ".", "-benchtime", "1x", "./...")
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if res.Err != nil {
		r.fail(what, "benchmarks fail", benchFailures(res.Combined()))
		return nil
	}
	r.ok(what)
	return nil
}

// uncachedModule says why the nested module dir cannot build offline
// (its modules are not all in the module cache), or "" when it can.
// verify never downloads a nested module's modules.
func uncachedModule(ctx context.Context, ws *repo.Workspace, dir string) string {
	res := ws.RunCmdEnv(ctx, 2*time.Minute, offline, ws.GoBin, "-C", dir, "mod", "download")
	if res.Err == nil {
		return ""
	}
	why := dir + "'s modules are not all in the module cache"
	if lines := res.Combined(); len(lines) > 0 {
		why += " (" + lines[0] + ")"
	}
	return why
}

// benchFailures keeps what explains a failed benchmark run: it drops the
// result lines of the benchmarks that passed and the run's header.
func benchFailures(lines []string) []string {
	var out []string
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "Benchmark") && strings.Contains(line, "\t"),
			strings.HasPrefix(line, "goos: "), strings.HasPrefix(line, "goarch: "),
			strings.HasPrefix(line, "pkg: "), strings.HasPrefix(line, "cpu: "):
			continue
		}
		out = append(out, line)
	}
	return out
}
