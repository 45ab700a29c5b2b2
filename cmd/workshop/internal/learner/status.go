package learner

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/i18n"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/labrun"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/term"
)

// Status prints every lab and the next thing to do. Each lab's summary is
// printed as soon as its tests finish (see labrun.Run); on a terminal a
// progress line says what is still running meanwhile.
func Status(ctx context.Context, ws *repo.Workspace) error {
	p := ws.P
	labs, infos, err := labrun.Present(ws)
	if err != nil {
		return err
	}
	w := term.New(ws.Stdout)
	p.Fprintln(w, "Resilience workshop: your progress")
	fmt.Fprintln(w)
	outcomes, err := labrun.Run(ctx, ws, infos, w, func(w io.Writer, o lab.Outcome, cached bool) {
		note := ""
		if cached {
			note = p.Text("unchanged since the last run")
		}
		printLabSummary(w, o, note)
	})
	if err != nil {
		return err
	}
	var ordered []lab.Outcome
	for _, l := range labs {
		if !l.Present {
			p.Fprintf(w, "Lab %s %-16s coming soon\n", l.Num(), l.Title())
			continue
		}
		ordered = append(ordered, outcomes[l.Name])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, nextStep(ordered))
	return nil
}

// printLabSummary prints a lab's steps; note, when not empty, follows the
// count in parentheses.
func printLabSummary(w io.Writer, o lab.Outcome, note string) {
	p := o.Info.P
	l := o.Info
	switch {
	case o.CompileErrs != nil:
		p.Fprintf(w, "Lab %s %-16s does not compile:\n", l.Num(), l.Title())
		for _, line := range repo.FirstLines(o.CompileErrs, 8) {
			p.Fprintf(w, "      %s\n", line)
		}
		return
	case len(o.Steps) == 0:
		p.Fprintf(w, "Lab %s %-16s has no steps yet\n", l.Num(), l.Title())
		return
	}
	if o.Passed() == 0 && !anyNotRun(o.Steps) {
		// Not started: its steps are the README's; status stays short.
		if note != "" {
			note = "; " + note
		}
		p.Fprintf(w, "Lab %s %-16s 0 of %d steps passed (not started%s)\n", l.Num(), l.Title(), len(o.Steps), note)
		printScore(w, o)
		return
	}
	if note != "" {
		note = " (" + note + ")"
	}
	p.Fprintf(w, "Lab %s %-16s %d of %d steps passed%s\n", l.Num(), l.Title(), o.Passed(), len(o.Steps), note)
	for _, s := range o.Steps {
		p.Fprintf(w, "      %-8s %s\n", p.Text(s.State.String()), l.StepTitle(s.N))
	}
	printScore(w, o)
}

// printScore prints the score the lab's experiment printed, if any (lab
// 10's score card).
func printScore(w io.Writer, o lab.Outcome) {
	p := o.Info.P
	if s, ok := o.Score(); ok {
		p.Fprintf(w, "      game day score %d of 100 (starter %d, reference %d; seed %d)\n", s.Yours, s.Starter, s.Reference, s.Seed)
	}
}

// nextStep picks the next thing to do: a lab that does not compile (the
// learner is in the middle of it), else the first step of a lab already
// started, else the first step of the first unfinished lab.
func nextStep(outcomes []lab.Outcome) string {
	var p *i18n.Printer
	if len(outcomes) > 0 {
		p = outcomes[0].Info.P
	}
	for _, o := range outcomes {
		if o.CompileErrs != nil {
			return p.Sprintf("Next: lab %s does not compile: fix the error above (go run ./cmd/workshop watch %s re-runs it each time you save)",
				o.Info.Num(), o.Info.Num())
		}
	}
	pick := func(started bool) string {
		for _, o := range outcomes {
			if o.Done() || (started && o.Passed() == 0) {
				continue
			}
			for _, s := range o.Steps {
				if s.State != lab.StepPassed {
					return p.Sprintf("Next: lab %s %s -> read %s, then run go run ./cmd/workshop watch %s",
						o.Info.Num(), o.Info.StepTitle(s.N), o.Info.StepLink(s.N), o.Info.Num())
				}
			}
		}
		return ""
	}
	if next := pick(true); next != "" {
		return next
	}
	if next := pick(false); next != "" {
		return next
	}
	if len(outcomes) == 0 {
		return p.Text("Next: the labs are coming soon; meanwhile, read the README and try go run ./cmd/fooddelivery")
	}
	return p.Text("Next: every lab here passes. Well done! Re-run the experiments (the last step of each lab) and compare your tables with the READMEs.")
}

// Check runs one lab and prints a step-by-step summary; it returns
// errFailed unless every step passes.
func Check(ctx context.Context, ws *repo.Workspace, arg string) error {
	p := ws.P
	labs, err := lab.List(ws)
	if err != nil {
		return err
	}
	l, ok := lab.Find(labs, arg)
	if !ok {
		return lab.NoLab(arg, labs)
	}
	w := ws.Stdout
	if !l.Present {
		p.Fprintf(w, "Lab %s %s is coming soon.\n", l.Num(), l.Title())
		return repo.ErrFailed
	}
	info, err := lab.ReadInfo(ws, l)
	if err != nil {
		return err
	}
	// check runs with the race detector where it is available: a data race
	// in a learner's pattern (a counter read after Unlock, say) passes a
	// plain run by luck and fails in production.
	// The experiment measures performance, so it runs without the race
	// detector (which slows code down several times and may make an
	// experiment skip itself).
	var run *gotest.Run
	var res repo.Result
	switch {
	case info.Tests.Capstone(ws.Module):
		p.Fprintf(w, "Running go test %s (without -race: what you edit is a plan, plain data; verify tests the code it runs under -race) ...\n\n", l.Pattern())
		run, res = ws.GoTest(ctx, lab.TestTimeout, l.Pattern())
	case ws.RaceAvailable(ctx):
		p.Fprintf(w, "Running go test -race %s (the experiment without -race) ...\n\n", l.Pattern())
		run, res = ws.GoTest(ctx, lab.TestTimeout, "-race", "-skip", gotest.ExperimentPattern, l.Pattern())
		if run.Compiled(path.Join(ws.Module, info.Dir())) {
			exp, expRes := ws.GoTest(ctx, lab.TestTimeout, "-run", gotest.ExperimentPattern, l.Pattern())
			run.Merge(exp)
			if res.Err == nil {
				res = expRes
			}
		}
	default:
		p.Fprintf(w, "Running go test %s (without -race: it needs cgo, a C compiler and a platform the race detector supports) ...\n\n", l.Pattern())
		run, res = ws.GoTest(ctx, lab.TestTimeout, l.Pattern())
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	o := lab.OutcomeOf(ws, info, run, res)
	if o.CompileErrs != nil {
		p.Fprintf(w, "Lab %s %s does not compile:\n\n", l.Num(), l.Title())
		for _, line := range repo.FirstLines(o.CompileErrs, 20) {
			p.Fprintf(w, "    %s\n", line)
		}
		p.Fprintf(w, "\nNext: fix the error above, then run go run ./cmd/workshop check %s\n", l.Num())
		return repo.ErrFailed
	}
	p.Fprintf(w, "Lab %s %s: %d of %d steps passed\n\n", l.Num(), l.Title(), o.Passed(), len(o.Steps))
	PrintSteps(w, ws.Root, info, o)
	if s, ok := o.Score(); ok {
		p.Fprintf(w, "\nYour game day score: %d of 100 (starter %d, reference %d; seed %d).\n", s.Yours, s.Starter, s.Reference, s.Seed)
	}
	fmt.Fprintln(w)
	if o.Done() && o.Pkg != nil && o.Pkg.Action == "pass" {
		p.Fprintf(w, "Lab %s passes. Well done! %s says what production libraries do; go run ./cmd/workshop shows what is next.\n",
			l.Num(), path.Join(info.Dir(), lab.Localized(ws, info.Lab, "PRODUCTION.md")))
		return nil
	}
	for _, s := range o.Steps {
		if s.State != lab.StepPassed {
			p.Fprintf(w, "Next: %s -> read %s, then run go run ./cmd/workshop watch %s\n", info.StepTitle(s.N), info.StepLink(s.N), l.Num())
			p.Fprintf(w, "Stuck? go run ./cmd/workshop hint %s shows a hint for it, one per call.\n", l.Num())
			break
		}
	}
	return repo.ErrFailed
}

func anyFailed(steps []lab.StepResult) bool {
	for _, s := range steps {
		if s.State == lab.StepFailing {
			return true
		}
	}
	return false
}

// PrintSteps prints each step's state and the first failing test's story.
// root is the repository's, for the race detector's paths.
func PrintSteps(w io.Writer, root string, info lab.Info, o lab.Outcome) {
	p := info.P
	for _, s := range o.Steps {
		p.Fprintf(w, "%-8s %s\n", p.Text(s.State.String()), info.StepTitle(s.N))
		switch s.State {
		case lab.StepFailing:
			t := s.Failed[0]
			more := ""
			if len(s.Failed) > 1 {
				more = p.Sprintf(" (and %d more failing test(s) in this step)", len(s.Failed)-1)
			}
			p.Fprintf(w, "    %s failed%s:\n", t.Name, more)
			if a, b, ok := condenseRace(t.Output, root, info.Dir()); ok {
				for _, line := range raceStory(info, s.N, a, b) {
					p.Fprintf(w, "        %s\n", line)
				}
				p.Fprintf(w, "        (the race detector's whole report: go test -race -run '^%s$' %s)\n", t.Name, info.Pattern())
				continue
			}
			for _, line := range repo.FirstLines(t.FailureLines(), 12) {
				p.Fprintf(w, "        %s\n", strings.TrimLeft(line, " \t"))
			}
		case lab.StepNotRun:
			p.Fprintf(w, "    did not run or did not finish: %s (an earlier test may have crashed the test binary)\n",
				strings.Join(s.NotRun, ", "))
		case lab.StepNoTests:
			p.Fprintf(w, "    the README describes this step but no TestStep%d test exists\n", s.N)
		}
	}
	if o.Pkg != nil && o.Pkg.Action == "fail" && !anyFailed(o.Steps) {
		// The binary failed without a failing step test: a panic outside a
		// test, a timeout, a failing non-step test.
		p.Fprintln(w, "\nThe test binary failed:")
		for _, line := range repo.FirstLines(o.Pkg.Output, 15) {
			p.Fprintf(w, "    %s\n", line)
		}
	}
}

// anyNotRun reports whether a step's tests did not run or did not finish.
func anyNotRun(steps []lab.StepResult) bool {
	for _, s := range steps {
		if s.State == lab.StepNotRun {
			return true
		}
	}
	return false
}
