package labrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/term"
)

// Present lists every lab and the information of those present.
func Present(ws *repo.Workspace) ([]lab.Lab, []lab.Info, error) {
	labs, err := lab.List(ws)
	if err != nil {
		return nil, nil, err
	}
	var infos []lab.Info
	for _, l := range labs {
		if !l.Present {
			continue
		}
		info, err := lab.ReadInfo(ws, l)
		if err != nil {
			return nil, nil, err
		}
		infos = append(infos, info)
	}
	return labs, infos, nil
}

// Run runs the tests of the labs (without -race, for speed: check runs
// with it) and calls show with each lab's outcome as soon as it is known,
// under w's lock: labs unchanged since their last run come from the status
// cache at once (cached is true), the others from one go test -json run
// that streams each lab's result as it finishes. While they run, w shows
// which labs are still running. It returns every lab's outcome by name; an
// error only when the context ended.
func Run(ctx context.Context, ws *repo.Workspace, infos []lab.Info, w *term.Progress, show func(w io.Writer, o lab.Outcome, cached bool)) (map[string]lab.Outcome, error) {
	outcomes := map[string]lab.Outcome{}
	if len(infos) == 0 {
		return outcomes, nil
	}
	byPath := map[string]lab.Info{}
	pkgs := map[string]string{}
	for _, info := range infos {
		p := path.Join(ws.Module, info.Dir())
		byPath[p] = info
		pkgs[p] = info.Pattern()
	}
	Report := func(info lab.Info, pkg *gotest.Package, events []byte, cached bool) {
		o := lab.Outcome{Info: info, Pkg: pkg, Events: events}
		if pkg.BuildFailed {
			o.CompileErrs = pkg.BuildOutput
		}
		o.Steps = lab.StepResults(pkg, info.Tests.Tests, info.Steps)
		w.Print(func(w io.Writer) {
			outcomes[info.Name] = o
			show(w, o, cached)
		})
	}
	cache, cacheErr := newStatusCache(ctx, ws, pkgs, nil)
	if cacheErr != nil {
		fmt.Fprintf(w, "(every lab runs: %v)\n", cacheErr)
	}
	var run []string
	for _, info := range infos {
		p := path.Join(ws.Module, info.Dir())
		if cache != nil {
			if events := cache.load(p); events != nil {
				if pkg := gotest.Parse(bytes.NewReader(events)).Packages[p]; completeRun(pkg) {
					Report(info, pkg, events, true)
					continue
				}
			}
		}
		run = append(run, info.Pattern())
	}
	if len(run) == 0 {
		return outcomes, nil
	}
	w.Status(func() string {
		var running []string
		for _, info := range infos {
			if _, ok := outcomes[info.Name]; !ok {
				running = append(running, info.Num())
			}
		}
		return ws.P.Sprintf("%d of %d labs done; building and testing %s", len(infos)-len(running), len(infos), strings.Join(running, " "))
	})
	parser := gotest.NewParser()
	parser.KeepEvents()
	var finished []*gotest.Package
	Run, res := ws.GoTestStream(ctx, lab.TestTimeout, parser, func(pkg *gotest.Package) {
		if info, ok := byPath[pkg.Path]; ok {
			finished = append(finished, pkg)
			Report(info, pkg, parser.Events[pkg.Path].Bytes(), false)
		}
	}, run...)
	w.Stop()
	if ctx.Err() != nil {
		return nil, ctx.Err() // an interrupted run is never stored
	}
	if cache != nil && len(finished) > 0 {
		// The files may have changed while the tests ran (a save during
		// the run): store only what ran on the files the keys were
		// computed from.
		if after, err := newStatusCache(ctx, ws, pkgs, nil); err == nil {
			for _, pkg := range finished {
				if k, ok := after.keys[pkg.Path]; ok && k == cache.keys[pkg.Path] {
					cache.store(pkg.Path, pkg, parser.Events[pkg.Path].Bytes())
				}
			}
		}
		cache.prune()
	}
	// Labs go test never reported on (a go.mod error, a setup failure).
	for _, info := range infos {
		if _, shown := outcomes[info.Name]; !shown {
			o := lab.OutcomeOf(ws, info, Run, res)
			w.Print(func(w io.Writer) {
				outcomes[info.Name] = o
				show(w, o, false)
			})
		}
	}
	return outcomes, nil
}
