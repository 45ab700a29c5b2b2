package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// verifyOptions are what every lab's checks share.
type verifyOptions struct {
	race        bool
	manifest    map[string]string
	manifestErr error
	tmp         string // a scratch directory for overlays and blobs
	skipNoted   *bool  // the "no git" notice is printed once
	// starters collects the pristine starters' overlay of every lab
	// checked (working path -> file with the pinned content), for the
	// build of the running system with the learners' code (clause 10);
	// nil: not collected.
	starters map[string]string
}

// verify checks the lab contract (CONTRIBUTING.md) for every present lab,
// then the project. When only names a lab ("02" or "02-deadlines"), verify
// checks that lab alone and skips the project checks.
func (ws *workspace) verify(ctx context.Context, only string) error {
	r := &report{w: ws.stdout}
	race := ws.raceAvailable(ctx)
	if !race {
		r.note("race detector unavailable (needs cgo, a C compiler and a supported platform): running without -race")
	}
	labs, err := ws.listLabs()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "workshop-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	manifest, _, manifestErr := ws.readManifest()
	skipNoted := false
	opts := verifyOptions{race: race, manifest: manifest, manifestErr: manifestErr, tmp: tmp, skipNoted: &skipNoted,
		starters: map[string]string{}}
	if only != "" {
		l, ok := findLab(labs, only)
		if !ok || !l.Present {
			return noLab(only, labs)
		}
		labs = []lab{l}
	}
	present := 0
	for _, l := range labs {
		if !l.Present {
			continue
		}
		present++
		fmt.Fprintf(ws.stdout, "\nLab %s\n", l.Name)
		if err := ws.verifyLab(ctx, r, l, opts); err != nil {
			return err
		}
	}
	if present == 0 {
		r.note("no labs yet: checking the project only")
	}
	if err := ws.verifyLearnerBuild(ctx, r, labs, opts); err != nil {
		return err
	}
	if only == "" {
		fmt.Fprintln(ws.stdout, "\nProject")
		if err := ws.verifyProject(ctx, r, race); err != nil {
			return err
		}
	}
	r.summary()
	if r.failed > 0 {
		return errFailed
	}
	return nil
}

// verifyLab runs every clause of the lab contract on one lab, in the order
// of the contract table. It returns an error only when it cannot go on at
// all (the context was cancelled, the disk failed).
func (ws *workspace) verifyLab(ctx context.Context, r *report, l lab, opts verifyOptions) error {
	info, err := ws.labInfo(l)
	if err != nil {
		return err
	}
	editable, _, err := ws.labFiles(l.Dir())
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
