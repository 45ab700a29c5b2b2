package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// labTestTimeout is the -timeout of one lab's test binary. The lab test
// helper's fake-time watchdog normally ends a stuck scenario long before.
const labTestTimeout = 3 * time.Minute

// labInfo is what the tool knows about a present lab without running it.
type labInfo struct {
	lab
	Tests  testSource
	Readme readme
	Steps  []int // step numbers from the tests and the README, sorted
}

func (ws *workspace) labInfo(l lab) (labInfo, error) {
	info := labInfo{lab: l}
	_, tests, err := ws.labFiles(l.Dir())
	if err != nil {
		return info, err
	}
	info.Tests = ws.parseTestSource(tests)
	if data, err := os.ReadFile(ws.abs(path.Join(l.Dir(), "README.md"))); err == nil {
		info.Readme = parseReadme(string(data))
	}
	seen := map[int]bool{}
	for _, t := range info.Tests.Tests {
		if n := stepOf(t); n > 0 {
			seen[n] = true
		}
	}
	for n := range info.Readme.Steps {
		seen[n] = true
	}
	for n := range seen {
		info.Steps = append(info.Steps, n)
	}
	sort.Ints(info.Steps)
	return info, nil
}

// stepTitle returns "step N: title" (or "step N" when the README has none).
func (info labInfo) stepTitle(n int) string {
	if t := info.Readme.Steps[n]; t != "" {
		return fmt.Sprintf("step %d: %s", n, t)
	}
	return fmt.Sprintf("step %d", n)
}

// stepLink returns where to read about step n.
func (info labInfo) stepLink(n int) string {
	link := info.Dir() + "/README.md"
	if a := info.Readme.Anchors[n]; a != "" {
		link += "#" + a
	}
	return link
}

// labOutcome is a present lab after its tests ran.
type labOutcome struct {
	info        labInfo
	pkg         *pkgResult
	compileErrs []string // non-nil when the lab does not build
	steps       []stepResult
	events      []byte // the run's go test -json lines, when runLabs ran it or had it cached
}

func (o labOutcome) passed() int {
	n := 0
	for _, s := range o.steps {
		if s.State == stepPassed {
			n++
		}
	}
	return n
}

func (o labOutcome) done() bool {
	return o.compileErrs == nil && len(o.steps) > 0 && o.passed() == len(o.steps)
}

// outcome combines a lab's source knowledge with a test run.
func (ws *workspace) outcome(info labInfo, run *testRun, res cmdResult) labOutcome {
	o := labOutcome{info: info}
	o.pkg = run.Packages[path.Join(ws.module, info.Dir())]
	switch {
	case o.pkg == nil:
		// The go command failed before the package ran (a syntax error in
		// go.mod, a setup failure): show what it said.
		lines := append(append([]string{}, run.Other...), splitLines(string(res.stderr))...)
		if len(lines) == 0 {
			lines = []string{"go test reported nothing for this lab"}
		}
		o.compileErrs = lines
	case o.pkg.BuildFailed:
		o.compileErrs = o.pkg.BuildOutput
		if len(o.compileErrs) == 0 {
			o.compileErrs = append(run.Other, splitLines(string(res.stderr))...)
		}
	}
	o.steps = stepResults(o.pkg, info.Tests.Tests, info.Steps)
	return o
}

// status prints every lab and the next thing to do. Each lab's summary is
// printed as soon as its tests finish (see runLabs); on a terminal a
// progress line says what is still running meanwhile.
func (ws *workspace) status(ctx context.Context) error {
	labs, infos, err := ws.presentLabs()
	if err != nil {
		return err
	}
	w := newProgress(ws.stdout)
	fmt.Fprintln(w, "Resilience workshop: your progress")
	fmt.Fprintln(w)
	outcomes, err := ws.runLabs(ctx, infos, w, func(w io.Writer, o labOutcome, cached bool) {
		note := ""
		if cached {
			note = "unchanged since the last run"
		}
		printLabSummary(w, o, note)
	})
	if err != nil {
		return err
	}
	var ordered []labOutcome
	for _, l := range labs {
		if !l.Present {
			fmt.Fprintf(w, "Lab %s %-16s coming soon\n", l.Num(), l.Title())
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
func printLabSummary(w io.Writer, o labOutcome, note string) {
	l := o.info
	switch {
	case o.compileErrs != nil:
		fmt.Fprintf(w, "Lab %s %-16s does not compile:\n", l.Num(), l.Title())
		for _, line := range firstLines(o.compileErrs, 8) {
			fmt.Fprintf(w, "      %s\n", line)
		}
		return
	case len(o.steps) == 0:
		fmt.Fprintf(w, "Lab %s %-16s has no steps yet\n", l.Num(), l.Title())
		return
	}
	if o.passed() == 0 && !anyNotRun(o.steps) {
		// Not started: its steps are the README's; status stays short.
		if note != "" {
			note = "; " + note
		}
		fmt.Fprintf(w, "Lab %s %-16s 0 of %d steps passed (not started%s)\n", l.Num(), l.Title(), len(o.steps), note)
		printScore(w, o)
		return
	}
	if note != "" {
		note = " (" + note + ")"
	}
	fmt.Fprintf(w, "Lab %s %-16s %d of %d steps passed%s\n", l.Num(), l.Title(), o.passed(), len(o.steps), note)
	for _, s := range o.steps {
		fmt.Fprintf(w, "      %-8s %s\n", s.State, l.stepTitle(s.N))
	}
	printScore(w, o)
}

// printScore prints the score the lab's experiment printed, if any (lab
// 10's score card).
func printScore(w io.Writer, o labOutcome) {
	if s, ok := o.score(); ok {
		fmt.Fprintf(w, "      %s\n", s)
	}
}

// nextStep picks the next thing to do: a lab that does not compile (the
// learner is in the middle of it), else the first step of a lab already
// started, else the first step of the first unfinished lab.
func nextStep(outcomes []labOutcome) string {
	for _, o := range outcomes {
		if o.compileErrs != nil {
			return fmt.Sprintf("Next: lab %s does not compile: fix the error above (go run ./cmd/workshop watch %s re-runs it each time you save)",
				o.info.Num(), o.info.Num())
		}
	}
	pick := func(started bool) string {
		for _, o := range outcomes {
			if o.done() || (started && o.passed() == 0) {
				continue
			}
			for _, s := range o.steps {
				if s.State != stepPassed {
					return fmt.Sprintf("Next: lab %s %s -> read %s, then run go run ./cmd/workshop watch %s",
						o.info.Num(), o.info.stepTitle(s.N), o.info.stepLink(s.N), o.info.Num())
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
		return "Next: the labs are coming soon; meanwhile, read the README and try go run ./cmd/fooddelivery"
	}
	return "Next: every lab here passes. Well done! Re-run the experiments (the last step of each lab) and compare your tables with the READMEs."
}

// check runs one lab and prints a step-by-step summary; it returns
// errFailed unless every step passes.
func (ws *workspace) check(ctx context.Context, arg string) error {
	labs, err := ws.listLabs()
	if err != nil {
		return err
	}
	l, ok := findLab(labs, arg)
	if !ok {
		return noLab(arg, labs)
	}
	w := ws.stdout
	if !l.Present {
		fmt.Fprintf(w, "Lab %s %s is coming soon.\n", l.Num(), l.Title())
		return errFailed
	}
	info, err := ws.labInfo(l)
	if err != nil {
		return err
	}
	// check runs with the race detector where it is available: a data race
	// in a learner's pattern (a counter read after Unlock, say) passes a
	// plain run by luck and fails in production.
	// The experiment measures performance, so it runs without the race
	// detector (which slows code down several times and may make an
	// experiment skip itself).
	var run *testRun
	var res cmdResult
	switch {
	case info.Tests.capstone(ws.module):
		fmt.Fprintf(w, "Running go test %s (without -race: what you edit is a plan, plain data; verify tests the code it runs under -race) ...\n\n", l.Pattern())
		run, res = ws.goTest(ctx, labTestTimeout, l.Pattern())
	case ws.raceAvailable(ctx):
		fmt.Fprintf(w, "Running go test -race %s (the experiment without -race) ...\n\n", l.Pattern())
		run, res = ws.goTest(ctx, labTestTimeout, "-race", "-skip", experimentPattern, l.Pattern())
		if run.compiled(path.Join(ws.module, info.Dir())) {
			exp, expRes := ws.goTest(ctx, labTestTimeout, "-run", experimentPattern, l.Pattern())
			run.merge(exp)
			if res.err == nil {
				res = expRes
			}
		}
	default:
		fmt.Fprintf(w, "Running go test %s (without -race: it needs cgo, a C compiler and a platform the race detector supports) ...\n\n", l.Pattern())
		run, res = ws.goTest(ctx, labTestTimeout, l.Pattern())
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	o := ws.outcome(info, run, res)
	if o.compileErrs != nil {
		fmt.Fprintf(w, "Lab %s %s does not compile:\n\n", l.Num(), l.Title())
		for _, line := range firstLines(o.compileErrs, 20) {
			fmt.Fprintf(w, "    %s\n", line)
		}
		fmt.Fprintf(w, "\nNext: fix the error above, then run go run ./cmd/workshop check %s\n", l.Num())
		return errFailed
	}
	fmt.Fprintf(w, "Lab %s %s: %d of %d steps passed\n\n", l.Num(), l.Title(), o.passed(), len(o.steps))
	printSteps(w, ws.root, info, o)
	if s, ok := o.score(); ok {
		fmt.Fprintf(w, "\nYour %s.\n", s)
	}
	fmt.Fprintln(w)
	if o.done() && o.pkg != nil && o.pkg.Action == "pass" {
		fmt.Fprintf(w, "Lab %s passes. Well done! %s says what production libraries do; go run ./cmd/workshop shows what is next.\n",
			l.Num(), path.Join(info.Dir(), "PRODUCTION.md"))
		return nil
	}
	for _, s := range o.steps {
		if s.State != stepPassed {
			fmt.Fprintf(w, "Next: %s -> read %s, then run go run ./cmd/workshop watch %s\n", info.stepTitle(s.N), info.stepLink(s.N), l.Num())
			fmt.Fprintf(w, "Stuck? go run ./cmd/workshop hint %s shows a hint for it, one per call.\n", l.Num())
			break
		}
	}
	return errFailed
}

func anyFailed(steps []stepResult) bool {
	for _, s := range steps {
		if s.State == stepFailing {
			return true
		}
	}
	return false
}

// printSteps prints each step's state and the first failing test's story.
// root is the repository's, for the race detector's paths.
func printSteps(w io.Writer, root string, info labInfo, o labOutcome) {
	for _, s := range o.steps {
		fmt.Fprintf(w, "%-8s %s\n", s.State, info.stepTitle(s.N))
		switch s.State {
		case stepFailing:
			t := s.Failed[0]
			more := ""
			if len(s.Failed) > 1 {
				more = fmt.Sprintf(" (and %d more failing test(s) in this step)", len(s.Failed)-1)
			}
			fmt.Fprintf(w, "    %s failed%s:\n", t.Name, more)
			if a, b, ok := condenseRace(t.Output, root, info.Dir()); ok {
				for _, line := range raceStory(info, s.N, a, b) {
					fmt.Fprintf(w, "        %s\n", line)
				}
				fmt.Fprintf(w, "        (the race detector's whole report: go test -race -run '^%s$' %s)\n", t.Name, info.Pattern())
				continue
			}
			for _, line := range firstLines(t.failureLines(), 12) {
				fmt.Fprintf(w, "        %s\n", strings.TrimLeft(line, " \t"))
			}
		case stepNotRun:
			fmt.Fprintf(w, "    did not run or did not finish: %s (an earlier test may have crashed the test binary)\n",
				strings.Join(s.NotRun, ", "))
		case stepNoTests:
			fmt.Fprintf(w, "    the README describes this step but no TestStep%d test exists\n", s.N)
		}
	}
	if o.pkg != nil && o.pkg.Action == "fail" && !anyFailed(o.steps) {
		// The binary failed without a failing step test: a panic outside a
		// test, a timeout, a failing non-step test.
		fmt.Fprintln(w, "\nThe test binary failed:")
		for _, line := range firstLines(o.pkg.Output, 15) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
}

// anyNotRun reports whether a step's tests did not run or did not finish.
func anyNotRun(steps []stepResult) bool {
	for _, s := range steps {
		if s.State == stepNotRun {
			return true
		}
	}
	return false
}
