package learner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/i18n"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/labrun"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/term"
)

// HintArgs splits hint's arguments: the lab and an optional --reset.
func HintArgs(args []string) (labArg string, reset bool, ok bool) {
	for _, a := range args {
		switch a {
		case "--reset", "-reset":
			if reset {
				return "", false, false
			}
			reset = true
		default:
			if labArg != "" || strings.HasPrefix(a, "-") {
				return "", false, false
			}
			labArg = a
		}
	}
	return labArg, reset, labArg != ""
}

// Hint runs a lab's tests, finds the first step that does not pass and
// shows the next of its hints not shown yet; "hint NN --reset" forgets
// what was shown for the lab.
func Hint(ctx context.Context, ws *repo.Workspace, args []string) error {
	p := ws.P
	arg, reset, ok := HintArgs(args)
	if !ok {
		return repo.ErrUsage
	}
	labs, err := lab.List(ws)
	if err != nil {
		return err
	}
	l, ok := lab.Find(labs, arg)
	if !ok {
		return lab.NoLab(arg, labs)
	}
	if !l.Present {
		p.Fprintf(ws.Stdout, "Lab %s %s is coming soon.\n", l.Num(), l.Title())
		return repo.ErrFailed
	}
	return showHint(ctx, ws, term.New(ws.Stdout), l, reset, false)
}

// showHint shows lab l's next hint on w (or forgets the hints shown, with
// reset). watch calls it for its typed "hint".
// inWatch leaves out the failure (watch shows it) and says "type hint".
func showHint(ctx context.Context, ws *repo.Workspace, w *term.Progress, l lab.Lab, reset, inWatch bool) error {
	p := ws.P
	stateFile, stateErr := hintStatePath(ws.Root)
	root := ws.Root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r // one state whichever path leads to the repository
	}

	if reset {
		if stateErr != nil {
			p.Fprintf(w, "Nothing to forget: hints cannot be remembered here (%v).\n", stateErr)
			return nil
		}
		state, note := loadHintState(stateFile)
		if note != "" {
			p.Fprintf(w, "note: %s\n", note)
		}
		if !state.forget(root, l.Name) && note == "" {
			p.Fprintf(w, "No hints of lab %s were shown yet; nothing to forget.\n", l.Num())
			return nil
		}
		if err := state.save(stateFile); err != nil {
			return fmt.Errorf("forgetting the hints of lab %s: %w", l.Num(), err)
		}
		p.Fprintf(w, "Forgot the hints shown for lab %s: go run ./cmd/workshop hint %s starts again from the gentlest.\n", l.Num(), l.Num())
		return nil
	}

	hints, problems, err := lab.ReadHints(ws, l)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.Fprintf(w, "Lab %s has no %s: read its README and the test's failure message.\n", l.Num(), hintsPath(ws, l))
		return repo.ErrFailed
	case err != nil:
		return err
	case len(problems) > 0:
		p.Fprintf(w, "%s cannot be read as hints (please report this):\n", hintsPath(ws, l))
		for _, prob := range repo.FirstLines(problems, 10) {
			p.Fprintf(w, "    %s\n", prob)
		}
		return repo.ErrFailed
	}

	info, err := lab.ReadInfo(ws, l)
	if err != nil {
		return err
	}
	// Without -race, unlike check: a hint only needs to know which step
	// fails first, and a plain run is several times quicker (labrun.Run; a
	// lab unchanged since its last run comes from the status cache).
	outcomes, err := labrun.Run(ctx, ws, []lab.Info{info}, w, func(io.Writer, lab.Outcome, bool) {})
	if err != nil {
		return err
	}
	o := outcomes[l.Name]
	if o.CompileErrs != nil {
		p.Fprintf(w, "Lab %s %s does not compile: fix the compile error first (the hints are about failing steps):\n\n", l.Num(), l.Title())
		for _, line := range repo.FirstLines(o.CompileErrs, 8) {
			p.Fprintf(w, "    %s\n", line)
		}
		p.Fprintf(w, "\nThen run go run ./cmd/workshop hint %s again.\n", l.Num())
		return repo.ErrFailed
	}
	var failing *lab.StepResult
	for i := range o.Steps {
		if o.Steps[i].State != lab.StepPassed {
			failing = &o.Steps[i]
			break
		}
	}
	if failing == nil {
		if o.Pkg != nil && o.Pkg.Action == "fail" {
			p.Fprintf(w, "Every step of lab %s passes, but the test binary failed: go run ./cmd/workshop check %s shows why.\n", l.Num(), l.Num())
			return repo.ErrFailed
		}
		p.Fprintf(w, "Every step of lab %s passes: no hint needed. Compare your code with the reference: go run ./cmd/workshop solution %s\n", l.Num(), l.Num())
		return nil
	}

	s := failing.N
	p.Fprintf(w, "Lab %s: the first step that does not pass is %s (%s).\n", l.Num(), info.StepTitle(s), info.StepLink(s))
	if len(failing.Failed) > 0 && !inWatch {
		t := failing.Failed[0]
		p.Fprintf(w, "    %s failed:\n", t.Name)
		for _, line := range repo.FirstLines(t.FailureLines(), 6) {
			p.Fprintf(w, "        %s\n", strings.TrimLeft(line, " \t"))
		}
	}
	fmt.Fprintln(w)
	list := hints.Step(s)
	if len(list) == 0 {
		p.Fprintf(w, "%s has no hint for step %d: read the step in the README and the failure above.\n", hintsPath(ws, l), s)
		return nil
	}

	if stateErr != nil {
		p.Fprintf(w, "note: the hints shown cannot be remembered here (%v); this is the first hint of step %d.\n\n", stateErr, s)
		printHint(p, w, list, 0, s, "")
		p.Fprintf(w, "\n%d more hint(s) for step %d in %s.\n", len(list)-1, s, hintsPath(ws, l))
		return nil
	}
	state, note := loadHintState(stateFile)
	if note != "" {
		p.Fprintf(w, "note: %s\n\n", note)
	}
	// The first hint not shown yet whose heading quotes the failure on
	// screen. When every hint quoting it was shown, the most explicit of
	// them again; when none quotes it, the first not shown yet, in the
	// file's order, said to be for another failure.
	failure := ""
	if len(failing.Failed) > 0 {
		failure = strings.Join(failing.Failed[0].FailureLines(), "\n")
	}
	shown := state.shown(root, l.Name, s)
	pick, seen, firstMatch := -1, 0, -1
	for i := range list {
		matches := hintMatches(list[i].Symptom, failure)
		if matches && firstMatch < 0 {
			firstMatch = i
		}
		if shown&(1<<i) != 0 {
			seen++
		} else if pick < 0 && matches {
			pick = i
		}
	}
	again := p.Sprintf("run go run ./cmd/workshop hint %s again", l.Num())
	if inWatch {
		again = p.Text("type hint again")
	}
	if pick < 0 && firstMatch >= 0 {
		last := lastOfChain(list, firstMatch)
		p.Fprintf(w, "You have seen every hint for this failure; here is the most explicit again.\n\n")
		printHint(p, w, list, last, s, failure)
		if left := len(list) - seen; left > 0 {
			p.Fprintf(w, "\nStep %d has %d more hint(s) for other failures: %s once the failure changes. go run ./cmd/workshop solution %s shows the answer.\n", s, left, again, l.Num())
		} else {
			p.Fprintf(w, "\nThat was the last hint for step %d. go run ./cmd/workshop hint %s --reset starts the hints again; go run ./cmd/workshop solution %s shows the answer.\n", s, l.Num(), l.Num())
		}
		return nil
	}
	matched := pick >= 0
	for i := range list {
		if pick < 0 && shown&(1<<i) == 0 {
			pick = i
		}
	}
	if pick < 0 {
		pick = len(list) - 1
		p.Fprintf(w, "You have seen all %d hints for step %d, and none quotes this failure; here is the last again.\n\n", len(list), s)
		printHint(p, w, list, pick, s, "")
		p.Fprintf(w, "\nThat was the last hint for step %d. go run ./cmd/workshop hint %s --reset starts the hints again; go run ./cmd/workshop solution %s shows the answer.\n", s, l.Num(), l.Num())
		return nil
	}
	if !matched {
		p.Fprintf(w, "No hint quotes this failure; here is the next you have not read for step %d.\n\n", s)
		failure = ""
	}
	printHint(p, w, list, pick, s, failure)
	state.setShown(root, l.Name, s, shown|1<<pick)
	if err := state.save(stateFile); err != nil {
		p.Fprintf(w, "\nnote: could not remember this hint (%v): the next call shows it again.\n", err)
	}
	left := len(list) - seen - 1
	chainLeft := 0
	for i, h := range list {
		if i != pick && h.Symptom == list[pick].Symptom && shown&(1<<i) == 0 {
			chainLeft++
		}
	}
	which := p.Text("this failure")
	if !matched {
		which = p.Text("that failure")
	}
	switch {
	case left == 0:
		p.Fprintf(w, "\nThat was the last hint for step %d.\n", s)
	case chainLeft == 0:
		p.Fprintf(w, "\nThat was the last hint for %s; step %d has %d more for other failures: %s once the failure changes.\n", which, s, left, again)
	case chainLeft == 1:
		p.Fprintf(w, "\n1 more hint for %s: %s.\n", which, again)
	default:
		p.Fprintf(w, "\n%d more hints for %s: %s.\n", chainLeft, which, again)
	}
	return nil
}

// hintMatches reports whether a hint's heading quotes the failure: one of
// its "quoted" texts, split at "...", occurs in failure piece by piece
// (case and spacing aside).
func hintMatches(symptom, failure string) bool {
	return matchingQuote(symptom, failure) != ""
}

// matchingQuote returns the first quoted text of a hint's heading that
// occurs in failure (its "..." standing for anything), or "".
func matchingQuote(symptom, failure string) string {
	norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	failure = norm(failure)
	if failure == "" {
		return ""
	}
	for _, q := range quotedText.FindAllStringSubmatch(symptom, -1) {
		matched, any := true, false
		for _, piece := range strings.Split(q[1], "...") {
			piece = norm(piece)
			if len(piece) < 3 {
				continue
			}
			any = true
			if !strings.Contains(failure, piece) {
				matched = false
				break
			}
		}
		if matched && any {
			return q[0]
		}
	}
	return ""
}

var quotedText = regexp.MustCompile(`"([^"]+)"`)

// lastOfChain returns the index of the last hint under the same heading
// as list[i]: its chain's most explicit.
func lastOfChain(list []lab.Hint, i int) int {
	last := i
	for j := i + 1; j < len(list); j++ {
		if list[j].Symptom == list[i].Symptom {
			last = j
		}
	}
	return last
}

// printHint prints hint i (0-based) of a step's list, numbered within its
// chain: the hints under the same heading, for the same failure. failure
// is the failure on screen when the heading quotes it, else "". Of a
// heading that quotes several failures ("a" or "b"), only the one on
// screen is shown (the first, when none is).
func printHint(p *i18n.Printer, w io.Writer, list []lab.Hint, i, step int, failure string) {
	k, n := 0, 0
	for j, h := range list {
		if h.Symptom == list[i].Symptom {
			n++
			if j <= i {
				k++
			}
		}
	}
	which, quote := p.Text("this failure"), matchingQuote(list[i].Symptom, failure)
	if quote == "" {
		which = p.Text("the failure")
		if m := quotedText.FindString(list[i].Symptom); m != "" {
			quote = m
		} else {
			quote = list[i].Symptom
		}
	}
	p.Fprintf(w, "Step %d, hint %d of %d for %s: %s\n\n", step, k, n, which, quote)
	fmt.Fprintln(w, list[i].Body)
}

// hintsPath is the slash path of the hints the learner reads: the lab's
// HINTS.md, or HINTS.de.md in German.
func hintsPath(ws *repo.Workspace, l lab.Lab) string {
	return path.Join(l.Dir(), lab.Localized(ws, l, "HINTS.md"))
}
