package contract

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/term"
)

// options are what every lab's checks share.
type options struct {
	race        bool
	manifest    map[string]string
	manifestErr error
	tmp         string // a scratch directory for overlays and blobs
	// starters collects the pristine starters' overlay of every lab
	// checked (working path -> file with the pinned content), for the
	// build of the running system with the learners' code (clause 10);
	// nil: not collected. Guarded by startersMu: labs are checked side by
	// side.
	starters   map[string]string
	startersMu *sync.Mutex
}

// Verify checks the lab contract (CONTRIBUTING.md) for every present lab,
// then the project. When only names a lab ("02" or "02-deadlines"), verify
// checks that lab alone and skips the project checks.
//
// After the build cache is filled (see warmBuildCache), everything runs
// side by side: every lab, the runs inside each lab (see
// labRun.startRuns) and the project's checks, with one go command more at
// once than the machine has cores (each waits on its disk now and then;
// see repo.Gate), the longest first (see prioProjectTests). The report,
// on stdout, is the one checking everything in order would print; which
// parts are done and an estimate of the time left go to stderr (see
// progress).
func Verify(ctx context.Context, ws *repo.Workspace, only string) error {
	r := &report{w: ws.Stdout}
	race := ws.RaceAvailable(ctx)
	if !race {
		r.note("race detector unavailable (needs cgo, a C compiler and a supported platform): running without -race")
	}
	labs, err := lab.List(ws)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "workshop-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	manifest, _, manifestErr := lab.ReadManifest(ws)
	opts := options{race: race, manifest: manifest, manifestErr: manifestErr, tmp: tmp,
		starters: map[string]string{}, startersMu: &sync.Mutex{}}
	if only != "" {
		l, ok := lab.Find(labs, only)
		if !ok || !l.Present {
			return lab.NoLab(only, labs)
		}
		labs = []lab.Lab{l}
	}
	var present []lab.Lab
	var names []string
	for _, l := range labs {
		if l.Present {
			present = append(present, l)
			names = append(names, "lab "+l.Name)
		}
	}
	ws.Gate = repo.NewGate(runtime.NumCPU() + 1)
	if os.Getenv("GOGC") == "" {
		// The go commands and the tests collect garbage a quarter as
		// often: a fifth less time, for memory this machine has.
		ws.Env = append(ws.Env, "GOGC=400")
	}
	prog := newProgress(ws.Stderr, partFinishes, partNames(names, only == ""))
	defer prog.stop()
	if prog.status != nil && term.IsTerminal(ws.Stdout) {
		r.w = prog.status.Above(ws.Stdout) // the report and the status line share the screen
	}

	prog.begin(buildCachePart)
	err = warmBuildCache(ctx, ws, r, present, only == "", race)
	prog.end(buildCachePart)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	var project *future[bufferedReport]
	defer func() {
		cancel()
		if project != nil {
			project.get()
		}
	}()
	if only == "" {
		project = spawn(func() bufferedReport {
			var b bufferedReport
			b.r.w = &b.out
			b.err = verifyProject(repo.WithPriority(ctx, prioProjectTests), ws, &b.r, race, prog)
			return b
		})
	}
	err = inOrder(ctx, r, len(present), func(ctx context.Context, i int, r *report) error {
		l := present[i]
		ctx = repo.WithPriority(ctx, prioLab-i)
		if isCapstone(ws, l) {
			ctx = repo.WithPriority(ctx, prioCapstone)
		}
		prog.begin("lab " + l.Name)
		defer prog.end("lab " + l.Name)
		fmt.Fprintf(r.w, "\nLab %s\n", l.Name)
		return verifyLab(ctx, ws, r, l, opts)
	})
	if err != nil {
		return err
	}
	if len(present) == 0 {
		r.note("no labs yet: checking the project only")
	}
	prog.begin(learnerBuildPart)
	err = verifyLearnerBuild(ctx, ws, r, labs, opts)
	prog.end(learnerBuildPart)
	if err != nil {
		return err
	}
	if project != nil {
		fmt.Fprintln(r.w, "\nProject")
		b := project.get()
		if err := r.add(&b); err != nil {
			return err
		}
	}
	r.summary()
	if r.failed > 0 {
		return repo.ErrFailed
	}
	return nil
}

// warmBuildCache compiles, once and before anything else runs, every
// package the checks build, in each configuration they build it: plain
// (the starters, the references, the project's vet), with -race (the
// project's tests, the references, the data-race mutants) and without cgo
// (the mutants, see mutantFlags). A go command does not wait for a compile
// another one is doing, so on a cold build cache the runs verify starts
// side by side would each compile the whole tree: on a 2-core machine, a
// minute and a half of CPU time more. The compiles land in the build cache
// the later go commands read (go test's vet of each package is not among
// them: it is quick); on a warm cache this takes a second or two. What
// fails to compile here is reported by the checks that build it (go list
// -e still exits 0); a go list that fails outright gets a note, and the
// checks then compile as they go. It returns ctx's error when ctx ended.
func warmBuildCache(ctx context.Context, ws *repo.Workspace, r *report, labs []lab.Lab, project, race bool) error {
	var labPkgs []string
	raceNeeded := project
	for _, l := range labs {
		labPkgs = append(labPkgs, l.Pattern())
		raceNeeded = raceNeeded || !isCapstone(ws, l) || hasRaceMutant(ws, l)
	}
	pkgs := labPkgs
	if project {
		pkgs = []string{"./..."}
	}
	if len(pkgs) == 0 {
		return nil
	}
	list := func(extra ...string) []string {
		return append([]string{"list", "-e", "-export", "-deps", "-test", "-f", "{{.ImportPath}}"}, extra...)
	}
	type warm struct{ env, args []string }
	runs := []warm{{nil, list(pkgs...)}}
	if race && raceNeeded {
		runs = append(runs, warm{nil, list(append([]string{"-race"}, pkgs...)...)})
	}
	if len(labPkgs) > 0 {
		runs = append(runs, warm{mutantEnv, list(labPkgs...)})
	}
	for _, w := range runs {
		res := ws.RunCmdEnv(ctx, 10*time.Minute, w.env, ws.GoBin, w.args...)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res.Err != nil {
			r.note(fmt.Sprintf("could not fill the build cache first (go %s: %v: %s): the checks compile as they go, which takes longer",
				strings.Join(w.args, " "), res.Err, strings.Join(repo.FirstLines(res.Combined(), 2), " ")))
			return nil
		}
	}
	return nil
}

// hasRaceMutant reports whether one of l's mutants is a data race, run
// with -race (false when they cannot be read: clause 6 says why).
func hasRaceMutant(ws *repo.Workspace, l lab.Lab) bool {
	_, mutants, _ := lab.Mutants(ws, l)
	for _, m := range mutants {
		if m.Race {
			return true
		}
	}
	return false
}

// Priorities at verify's gate, longest runs first so that none is left to
// run alone at the end: the project's checks (its tests are one go test of
// every package, the longest run of all; its go list, vet and benchmarks
// are quick, and its tests wait for the go list), the browser tests, the
// game day's runs, then the labs in order, so that their reports come in
// order too.
const (
	prioProjectTests = 300
	prioBrowser      = 250
	prioCapstone     = 200
	prioLab          = 100 // lab i (from 0) gets prioLab - i
)

// bufferedReport is a report written aside, to be printed in its turn.
type bufferedReport struct {
	out bytes.Buffer
	r   report
	err error
}

// add prints b's lines to r's writer and adds up its counts; it returns
// b's error.
func (r *report) add(b *bufferedReport) error {
	io.Copy(r.w, &b.out)
	r.passed += b.r.passed
	r.failed += b.r.failed
	return b.err
}

// inOrder runs check for 0..n-1 side by side, each into its own report,
// and prints each one's lines to r's writer in index order, as soon as it
// and those before it are done: the output is what running them one after
// another prints, a note several of them make (no git) printed the first
// time only; r adds up their counts. The first error ends it and cancels
// the others.
func inOrder(ctx context.Context, r *report, n int, check func(context.Context, int, *report) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*future[bufferedReport], n)
	for i := range results {
		results[i] = spawn(func() bufferedReport {
			var b bufferedReport
			b.r.w = &b.out
			b.err = check(ctx, i, &b.r)
			return b
		})
	}
	defer func() {
		for _, f := range results {
			f.get()
		}
	}()
	noted := map[string]bool{}
	for _, f := range results {
		b := f.get()
		var kept bytes.Buffer
		for _, line := range strings.SplitAfter(b.out.String(), "\n") {
			if strings.HasPrefix(line, "note ") {
				if noted[line] {
					continue
				}
				noted[line] = true
			}
			kept.WriteString(line)
		}
		b.out = kept
		if err := r.add(&b); err != nil {
			cancel()
			return err
		}
	}
	return nil
}

// isCapstone reports whether l's tests play the game day (see
// lab.TestSource.Capstone); false when they cannot be read.
func isCapstone(ws *repo.Workspace, l lab.Lab) bool {
	info, err := lab.ReadInfo(ws, l)
	return err == nil && info.Tests.Capstone(ws.Module)
}

// verifyLab runs every clause of the lab contract on one lab, in the order
// of the contract table. It returns an error only when it cannot go on at
// all (the context was cancelled, the disk failed).
func verifyLab(ctx context.Context, ws *repo.Workspace, r *report, l lab.Lab, opts options) error {
	info, err := lab.ReadInfo(ws, l)
	if err != nil {
		return err
	}
	editable, _, err := lab.Files(ws, l.Dir())
	if err != nil {
		return err
	}
	lr := &labRun{ws: ws, r: r, opts: opts, lab: l, info: info, editable: editable,
		tmp: filepath.Join(opts.tmp, l.Name)}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel() // runs no clause waited for (a lab that stopped early) end now
		for _, wait := range lr.waits {
			wait()
		}
	}()
	if err := os.MkdirAll(lr.tmp, 0o755); err != nil {
		return err
	}
	for _, c := range contract {
		if err := c.check(lr, ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.n == 1 {
			if err := lr.startRuns(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
