package contract

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
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

// labWorkers is how many labs verify checks side by side: two, since a
// lab's tests often keep one core busy (the game day's run on one P) and
// its go commands wait on each other, so a second lab fills the other.
const labWorkers = 2

// Verify checks the lab contract (CONTRIBUTING.md) for every present lab,
// then the project. When only names a lab ("02" or "02-deadlines"), verify
// checks that lab alone and skips the project checks.
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
	for _, l := range labs {
		if l.Present {
			present = append(present, l)
		}
	}
	check := func(ctx context.Context, r *report, l lab.Lab) error { return verifyLab(ctx, ws, r, l, opts) }
	if err := verifyLabs(ctx, ws.Stdout, r, present, func(l lab.Lab) bool { return isCapstone(ws, l) }, check); err != nil {
		return err
	}
	if len(present) == 0 {
		r.note("no labs yet: checking the project only")
	}
	if err := verifyLearnerBuild(ctx, ws, r, labs, opts); err != nil {
		return err
	}
	if only == "" {
		fmt.Fprintln(ws.Stdout, "\nProject")
		if err := verifyProject(ctx, ws, r, race); err != nil {
			return err
		}
	}
	r.summary()
	if r.failed > 0 {
		return repo.ErrFailed
	}
	return nil
}

// verifyLabs checks labs with check, labWorkers at a time, each into its
// own buffer, and writes to w
// each lab's report in the labs' order as soon as it and the
// labs before it are done: the output is what checking them one after
// another prints, a note that several labs make (no git) printed for the
// first of them only; r adds up their counts. The labs first reports
// true for (the capstone, the longest) are started first.
func verifyLabs(ctx context.Context, w io.Writer, r *report, labs []lab.Lab, first func(lab.Lab) bool,
	check func(context.Context, *report, lab.Lab) error) error {
	type result struct {
		out  bytes.Buffer
		r    report
		err  error
		done chan struct{}
	}
	results := make([]*result, len(labs))
	for i := range results {
		results[i] = &result{done: make(chan struct{})}
		results[i].r.w = &results[i].out
	}
	order := make([]int, len(labs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ca, cb := first(labs[a]), first(labs[b])
		switch {
		case ca && !cb:
			return -1
		case cb && !ca:
			return 1
		}
		return 0
	})
	next := make(chan int, len(order))
	for _, i := range order {
		next <- i
	}
	close(next)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range min(labWorkers, len(labs)) {
		wg.Go(func() {
			for i := range next {
				res := results[i]
				fmt.Fprintf(&res.out, "\nLab %s\n", labs[i].Name)
				res.err = check(ctx, &res.r, labs[i])
				close(res.done)
			}
		})
	}
	defer wg.Wait()
	noted := map[string]bool{}
	for _, res := range results {
		<-res.done
		for _, line := range strings.SplitAfter(res.out.String(), "\n") {
			if strings.HasPrefix(line, "note ") {
				if noted[line] {
					continue
				}
				noted[line] = true
			}
			io.WriteString(w, line)
		}
		r.passed += res.r.passed
		r.failed += res.r.failed
		if res.err != nil {
			cancel()
			return res.err
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
	}
	return nil
}
