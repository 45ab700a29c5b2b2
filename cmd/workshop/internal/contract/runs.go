package contract

import (
	"context"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// future is a value its own goroutine computes.
type future[T any] struct {
	done chan struct{}
	v    T
}

// spawn starts computing f.
func spawn[T any](f func() T) *future[T] {
	ft := &future[T]{done: make(chan struct{})}
	go func() {
		defer close(ft.done)
		ft.v = f()
	}()
	return ft
}

// track spawns f as one of lr's runs, which verifyLab waits for before it
// returns, whatever happened.
func track[T any](lr *labRun, f func() T) *future[T] {
	ft := spawn(f)
	lr.waits = append(lr.waits, func() { ft.get() })
	return ft
}

// get waits for the value.
func (f *future[T]) get() T {
	<-f.done
	return f.v
}

// goRun is one `go test -json` run.
type goRun struct {
	run *gotest.Run
	res repo.Result
}

// mutantRun is one mutant's run, or why it could not run.
type mutantRun struct {
	o        lab.Outcome
	problems []string
}

// mutantFlags and mutantEnv make a mutant's run about a third cheaper than
// a plain go test, for the same test results: vet ran on the starter
// (clause 2) and a mutant is wrong on purpose; no test reads the symbol
// table or the debug information the linker writes (-s -w drop them); and
// the lab tests run on an in-memory network, so the net package needs no
// cgo, which saves the C toolchain and a slower link (a data-race mutant,
// run with -race, keeps cgo: the race detector needs it).
var (
	mutantFlags = []string{"-count=1", "-vet=off", "-ldflags=-s -w"}
	mutantEnv   = []string{"CGO_ENABLED=0"}
)

// startRuns starts, as soon as clause 1 knows the starter's files, every
// go command whose results the later clauses report: the starter's vet and
// tests (clauses 2 to 4), the reference's tests and experiment (clause 5)
// and each mutant's tests (clause 6). They run side by side, as many at
// once as the workspace's gate admits, and each clause waits for the runs
// it reads, so the report is what running them one after another prints.
func (lr *labRun) startRuns(ctx context.Context) error {
	if lr.starter != nil {
		overlay, err := writeOverlay(lr.tmp, "starter.json", lr.starter.Replace)
		if err != nil {
			return err
		}
		vetArgs := append([]string{"vet"}, append(overlayArgs(overlay), lr.lab.Pattern())...)
		lr.starterVet = track(lr, func() repo.Result { return lr.ws.GoCmd(ctx, 5*time.Minute, vetArgs...) })
		testArgs := append(overlayArgs(overlay), "-count=1", lr.lab.Pattern())
		lr.starterTest = track(lr, func() goRun {
			run, res := lr.ws.GoTest(ctx, lab.TestTimeout, testArgs...)
			return goRun{run, res}
		})
	}
	lr.solFiles, lr.solProblems = lab.SolutionLayout(lr.ws, "solutions/"+lr.lab.Name, lr.editable)
	if lr.solFiles == nil {
		return nil
	}
	lr.solOverlay, lr.solOverlayErr = writeOverlay(lr.tmp, "solution.json", solutionOverlay(lr.ws, lr.editable, lr.solFiles))
	if lr.solOverlayErr != nil {
		return nil
	}
	args, _ := lr.solutionArgs()
	lr.solTest = track(lr, func() goRun {
		run, res := lr.ws.GoTest(ctx, solutionTestTimeout, append(args, lr.lab.Pattern())...)
		return goRun{run, res}
	})
	expArgs := append(overlayArgs(lr.solOverlay), "-count=1", "-run", gotest.ExperimentPattern, lr.lab.Pattern())
	lr.solExperiment = track(lr, func() goRun {
		run, res := lr.ws.GoTest(ctx, lab.TestTimeout, expArgs...)
		return goRun{run, res}
	})
	lr.startMutants(ctx)
	return nil
}

// startMutants reads the lab's mutants and starts the run of each one
// clause 6 will judge.
func (lr *labRun) startMutants(ctx context.Context) {
	ctx, lr.cancelMutants = context.WithCancel(ctx)
	lr.mutantDir, lr.mutantList, lr.mutantProblems = lab.Mutants(lr.ws, lr.lab)
	lr.refs, lr.refsErr = lab.ReadReferences(lr.solFiles)
	if lr.refsErr != nil {
		return
	}
	lr.mutantRuns = map[string]*future[mutantRun]{}
	for _, m := range lr.mutantList {
		if m.StepProblem(lr.info) != "" || m.Race && !lr.opts.race {
			continue
		}
		flags := mutantFlags
		if m.Race {
			flags = append(flags[:len(flags):len(flags)], "-race")
		}
		lr.mutantRuns[m.Name] = track(lr, func() mutantRun {
			o, problems := runMutant(ctx, lr.ws, lr.lab, lr.info, lr.editable, lr.solFiles, lr.refs, m, lr.tmp, flags...)
			return mutantRun{o, problems}
		})
	}
}
