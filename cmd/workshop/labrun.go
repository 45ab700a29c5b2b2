package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strings"
)

// presentLabs lists every lab and the information of those present.
func (ws *workspace) presentLabs() ([]lab, []labInfo, error) {
	labs, err := ws.listLabs()
	if err != nil {
		return nil, nil, err
	}
	var infos []labInfo
	for _, l := range labs {
		if !l.Present {
			continue
		}
		info, err := ws.labInfo(l)
		if err != nil {
			return nil, nil, err
		}
		infos = append(infos, info)
	}
	return labs, infos, nil
}

// runLabs runs the tests of the labs (without -race, for speed: check runs
// with it) and calls show with each lab's outcome as soon as it is known,
// under w's lock: labs unchanged since their last run come from the status
// cache at once (cached is true), the others from one go test -json run
// that streams each lab's result as it finishes. While they run, w shows
// which labs are still running. It returns every lab's outcome by name; an
// error only when the context ended.
func (ws *workspace) runLabs(ctx context.Context, infos []labInfo, w *progress, show func(w io.Writer, o labOutcome, cached bool)) (map[string]labOutcome, error) {
	outcomes := map[string]labOutcome{}
	if len(infos) == 0 {
		return outcomes, nil
	}
	byPath := map[string]labInfo{}
	pkgs := map[string]string{}
	for _, info := range infos {
		p := path.Join(ws.module, info.Dir())
		byPath[p] = info
		pkgs[p] = info.Pattern()
	}
	report := func(info labInfo, pkg *pkgResult, events []byte, cached bool) {
		o := labOutcome{info: info, pkg: pkg, events: events}
		if pkg.BuildFailed {
			o.compileErrs = pkg.BuildOutput
		}
		o.steps = stepResults(pkg, info.Tests.Tests, info.Steps)
		w.print(func(w io.Writer) {
			outcomes[info.Name] = o
			show(w, o, cached)
		})
	}
	cache, cacheErr := ws.newStatusCache(ctx, pkgs, nil)
	if cacheErr != nil {
		fmt.Fprintf(w, "(every lab runs: %v)\n", cacheErr)
	}
	var run []string
	for _, info := range infos {
		p := path.Join(ws.module, info.Dir())
		if cache != nil {
			if events := cache.load(p); events != nil {
				if pkg := parseTestJSON(bytes.NewReader(events)).Packages[p]; completeRun(pkg) {
					report(info, pkg, events, true)
					continue
				}
			}
		}
		run = append(run, info.Pattern())
	}
	if len(run) == 0 {
		return outcomes, nil
	}
	w.status(func() string {
		var running []string
		for _, info := range infos {
			if _, ok := outcomes[info.Name]; !ok {
				running = append(running, info.Num())
			}
		}
		return fmt.Sprintf("%d of %d labs done; building and testing %s", len(infos)-len(running), len(infos), strings.Join(running, " "))
	})
	parser := newTestParser()
	parser.keepEvents()
	var finished []*pkgResult
	testRun, res := ws.goTestStream(ctx, labTestTimeout, parser, func(pkg *pkgResult) {
		if info, ok := byPath[pkg.Path]; ok {
			finished = append(finished, pkg)
			report(info, pkg, parser.events[pkg.Path].Bytes(), false)
		}
	}, run...)
	w.stop()
	if ctx.Err() != nil {
		return nil, ctx.Err() // an interrupted run is never stored
	}
	if cache != nil && len(finished) > 0 {
		// The files may have changed while the tests ran (a save during
		// the run): store only what ran on the files the keys were
		// computed from.
		if after, err := ws.newStatusCache(ctx, pkgs, nil); err == nil {
			for _, pkg := range finished {
				if k, ok := after.keys[pkg.Path]; ok && k == cache.keys[pkg.Path] {
					cache.store(pkg.Path, pkg, parser.events[pkg.Path].Bytes())
				}
			}
		}
		cache.prune()
	}
	// Labs go test never reported on (a go.mod error, a setup failure).
	for _, info := range infos {
		if _, shown := outcomes[info.Name]; !shown {
			o := ws.outcome(info, testRun, res)
			w.print(func(w io.Writer) {
				outcomes[info.Name] = o
				show(w, o, false)
			})
		}
	}
	return outcomes, nil
}
