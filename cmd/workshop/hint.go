package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The hint command and the HINTS.md format.
//
// A lab's hints are in labs/NN-name/HINTS.md, a Markdown file in this form:
//
//	# Lab 03 (retries): hints              (anything before the first "## " is a preamble)
//
//	## Step 1                              one level-2 heading per step, in increasing order
//
//	### "Retryable(HTTP 404) = true"       one level-3 heading per hint: the symptom it answers
//
//	List the transient statuses ...        the hint's body, Markdown, up to the next ## or ###
//
//	### "the first attempt ... timed out"  the next hint of step 1, a little less gentle
//
// Within a step the hints go from the gentlest to the most explicit (the
// last ones show code). Headings inside fenced code blocks are body text;
// deeper headings (####) are body text too. A step has at least one hint
// and a hint a non-empty body.

// hintFile is a parsed HINTS.md.
type hintFile struct {
	Steps []hintStep
}

type hintStep struct {
	N     int
	Line  int
	Hints []hint
}

type hint struct {
	Symptom string // the heading's text
	Body    string // Markdown, without leading and trailing blank lines
	Line    int    // the heading's line
}

// step returns the hints of step n (nil when it has none).
func (f hintFile) step(n int) []hint {
	for _, s := range f.Steps {
		if s.N == n {
			return s.Hints
		}
	}
	return nil
}

var hintStepHeading = regexp.MustCompile(`^Step ([0-9]+)$`)

// parseHints reads a HINTS.md; name is the file's name in the problems it
// reports, each "name:line: what". It returns what it could read even
// when there are problems.
func parseHints(name, text string) (hintFile, []string) {
	var f hintFile
	var problems []string
	bad := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	var (
		step     *hintStep // the current step
		h        *hint     // the current hint
		body     []string  // the current hint's lines
		open     fence     // the fence of the code block we are in, if any
		fenceAt  int
		stray    int // first line of text between a step heading and its first hint
		lineNo   int
		sawTitle bool
	)
	endHint := func() {
		if h == nil {
			return
		}
		h.Body = strings.Trim(strings.Join(body, "\n"), "\n")
		if strings.TrimSpace(h.Body) == "" {
			bad(h.Line, "hint %q has no body", h.Symptom)
		}
		step.Hints = append(step.Hints, *h)
		h, body = nil, nil
	}
	endStep := func() {
		endHint()
		if step == nil {
			return
		}
		if len(step.Hints) == 0 {
			bad(step.Line, "step %d has no hint (### symptom, then the hint)", step.N)
		}
		f.Steps = append(f.Steps, *step)
		step = nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		switch fo := fenceLine(line); {
		case open.n == 0 && fo.n > 0:
			open, fenceAt = fo, lineNo
		case open.n > 0 && open.closesLine(line):
			open = fence{}
		case open.n > 0:
		case strings.HasPrefix(line, "# "):
			if sawTitle || step != nil {
				bad(lineNo, "a level-1 heading belongs only at the top of the file")
			}
			sawTitle = true
			continue
		case strings.HasPrefix(line, "## "):
			endStep()
			text := headingText(line[3:])
			m := hintStepHeading.FindStringSubmatch(text)
			n, err := 0, errors.New("no match")
			if m != nil {
				n, err = strconv.Atoi(m[1])
			}
			if err != nil || n < 1 {
				bad(lineNo, "level-2 heading %q: want \"## Step N\" (N from 1)", text)
				continue
			}
			if k := len(f.Steps); k > 0 && f.Steps[k-1].N >= n {
				bad(lineNo, "step %d comes after step %d: steps go in increasing order, each once", n, f.Steps[k-1].N)
			}
			step, stray = &hintStep{N: n, Line: lineNo}, 0
			continue
		case strings.HasPrefix(line, "### "):
			if step == nil {
				bad(lineNo, "hint %q comes before any \"## Step N\" heading", headingText(line[4:]))
				continue
			}
			endHint()
			h = &hint{Symptom: headingText(line[4:]), Line: lineNo}
			if h.Symptom == "" {
				bad(lineNo, "a hint's heading is empty: it names the symptom the hint answers")
			}
			continue
		case line == "#" || line == "##" || line == "###":
			bad(lineNo, "an empty heading")
			continue
		}
		switch {
		case h != nil:
			body = append(body, line)
		case step != nil && trimmed != "" && stray == 0:
			stray = lineNo
			bad(lineNo, "text under \"## Step %d\" before its first hint: every hint starts with \"### symptom\"", step.N)
		}
	}
	if open.n > 0 {
		bad(fenceAt, "a code block that is never closed")
	}
	endStep()
	if len(f.Steps) == 0 && len(problems) == 0 {
		bad(lineNo, "no \"## Step N\" heading: the file has no hints")
	}
	return f, problems
}

// readHints reads and parses a lab's HINTS.md.
func (ws *workspace) readHints(l lab) (hintFile, []string, error) {
	rel := path.Join(l.Dir(), "HINTS.md")
	data, err := os.ReadFile(ws.abs(rel))
	if err != nil {
		return hintFile{}, nil, err
	}
	f, problems := parseHints(rel, string(data))
	return f, problems, nil
}

// hintState is what the hint command remembers between calls: for each
// repository (its absolute path) and lab, which hints of each step it has
// shown, as a bit set (bit i: the step's hint i, counting from 0).
type hintState struct {
	Repos map[string]map[string]map[int]int `json:"repos"` // root -> lab name -> step -> hints shown (bits)
}

func (s *hintState) shown(root, labName string, step int) int {
	return s.Repos[root][labName][step]
}

func (s *hintState) setShown(root, labName string, step, n int) {
	if s.Repos == nil {
		s.Repos = map[string]map[string]map[int]int{}
	}
	if s.Repos[root] == nil {
		s.Repos[root] = map[string]map[int]int{}
	}
	if s.Repos[root][labName] == nil {
		s.Repos[root][labName] = map[int]int{}
	}
	s.Repos[root][labName][step] = n
}

// forget drops what was shown for a lab; it reports whether there was any.
func (s *hintState) forget(root, labName string) bool {
	_, had := s.Repos[root][labName]
	delete(s.Repos[root], labName)
	if len(s.Repos[root]) == 0 {
		delete(s.Repos, root)
	}
	return had
}

const hintStateDir = "gophereats-workshop"

// hintStatePath returns where the hint state lives: in the user's cache
// directory, else their config directory, and never inside the repository
// at root (the learner's checkout stays clean).
func hintStatePath(root string) (string, error) {
	var why []string
	for _, dir := range []func() (string, error){os.UserCacheDir, os.UserConfigDir} {
		d, err := dir()
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if !filepath.IsAbs(d) {
			why = append(why, d+" is not an absolute path")
			continue
		}
		p := filepath.Join(d, hintStateDir, "hints.json")
		if within(root, p) {
			why = append(why, p+" is inside the repository")
			continue
		}
		return p, nil
	}
	return "", errors.New(strings.Join(why, "; "))
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// loadHintState reads the state file. A missing file is an empty state; an
// unreadable or corrupt one is an empty state too, with a note saying why.
func loadHintState(file string) (state *hintState, note string) {
	state = &hintState{}
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return state, ""
	case err != nil:
		return state, fmt.Sprintf("could not read %s (%v): starting from the first hints", file, err)
	}
	if err := json.Unmarshal(data, state); err != nil {
		return &hintState{}, fmt.Sprintf("%s is corrupt (%v): starting from the first hints; it will be rewritten", file, err)
	}
	return state, ""
}

// save writes the state atomically: a temporary file in the same
// directory, then a rename over the old one, so that an interrupted write
// never leaves half a file.
func (s *hintState) save(file string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "hints-*.json.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// hintArgs splits hint's arguments: the lab and an optional --reset.
func hintArgs(args []string) (labArg string, reset bool, ok bool) {
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

// hint runs a lab's tests, finds the first step that does not pass and
// shows the next of its hints not shown yet; "hint NN --reset" forgets
// what was shown for the lab.
func (ws *workspace) hint(ctx context.Context, args []string) error {
	arg, reset, ok := hintArgs(args)
	if !ok {
		return errUsage
	}
	labs, err := ws.listLabs()
	if err != nil {
		return err
	}
	l, ok := findLab(labs, arg)
	if !ok {
		return noLab(arg, labs)
	}
	if !l.Present {
		fmt.Fprintf(ws.stdout, "Lab %s %s is coming soon.\n", l.Num(), l.Title())
		return errFailed
	}
	return ws.showHint(ctx, newProgress(ws.stdout), l, reset, false)
}

// showHint shows lab l's next hint on w (or forgets the hints shown, with
// reset). watch calls it for its typed "hint".
// inWatch leaves out the failure (watch shows it) and says "type hint".
func (ws *workspace) showHint(ctx context.Context, w *progress, l lab, reset, inWatch bool) error {
	stateFile, stateErr := hintStatePath(ws.root)
	root := ws.root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r // one state whichever path leads to the repository
	}

	if reset {
		if stateErr != nil {
			fmt.Fprintf(w, "Nothing to forget: hints cannot be remembered here (%v).\n", stateErr)
			return nil
		}
		state, note := loadHintState(stateFile)
		if note != "" {
			fmt.Fprintf(w, "note: %s\n", note)
		}
		if !state.forget(root, l.Name) && note == "" {
			fmt.Fprintf(w, "No hints of lab %s were shown yet; nothing to forget.\n", l.Num())
			return nil
		}
		if err := state.save(stateFile); err != nil {
			return fmt.Errorf("forgetting the hints of lab %s: %w", l.Num(), err)
		}
		fmt.Fprintf(w, "Forgot the hints shown for lab %s: go run ./cmd/workshop hint %s starts again from the gentlest.\n", l.Num(), l.Num())
		return nil
	}

	hints, problems, err := ws.readHints(l)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "Lab %s has no %s/HINTS.md: read its README and the test's failure message.\n", l.Num(), l.Dir())
		return errFailed
	case err != nil:
		return err
	case len(problems) > 0:
		fmt.Fprintf(w, "%s/HINTS.md cannot be read as hints (please report this):\n", l.Dir())
		for _, p := range firstLines(problems, 10) {
			fmt.Fprintf(w, "    %s\n", p)
		}
		return errFailed
	}

	info, err := ws.labInfo(l)
	if err != nil {
		return err
	}
	// Without -race, unlike check: a hint only needs to know which step
	// fails first, and a plain run is several times quicker (runLabs; a
	// lab unchanged since its last run comes from the status cache).
	outcomes, err := ws.runLabs(ctx, []labInfo{info}, w, func(io.Writer, labOutcome, bool) {})
	if err != nil {
		return err
	}
	o := outcomes[l.Name]
	if o.compileErrs != nil {
		fmt.Fprintf(w, "Lab %s %s does not compile: fix the compile error first (the hints are about failing steps):\n\n", l.Num(), l.Title())
		for _, line := range firstLines(o.compileErrs, 8) {
			fmt.Fprintf(w, "    %s\n", line)
		}
		fmt.Fprintf(w, "\nThen run go run ./cmd/workshop hint %s again.\n", l.Num())
		return errFailed
	}
	var failing *stepResult
	for i := range o.steps {
		if o.steps[i].State != stepPassed {
			failing = &o.steps[i]
			break
		}
	}
	if failing == nil {
		if o.pkg != nil && o.pkg.Action == "fail" {
			fmt.Fprintf(w, "Every step of lab %s passes, but the test binary failed: go run ./cmd/workshop check %s shows why.\n", l.Num(), l.Num())
			return errFailed
		}
		fmt.Fprintf(w, "Every step of lab %s passes: no hint needed. Compare your code with the reference: go run ./cmd/workshop solution %s\n", l.Num(), l.Num())
		return nil
	}

	s := failing.N
	fmt.Fprintf(w, "Lab %s: the first step that does not pass is %s (%s).\n", l.Num(), info.stepTitle(s), info.stepLink(s))
	if len(failing.Failed) > 0 && !inWatch {
		t := failing.Failed[0]
		fmt.Fprintf(w, "    %s failed:\n", t.Name)
		for _, line := range firstLines(t.failureLines(), 6) {
			fmt.Fprintf(w, "        %s\n", strings.TrimLeft(line, " \t"))
		}
	}
	fmt.Fprintln(w)
	list := hints.step(s)
	if len(list) == 0 {
		fmt.Fprintf(w, "%s/HINTS.md has no hint for step %d: read the step in the README and the failure above.\n", l.Dir(), s)
		return nil
	}

	if stateErr != nil {
		fmt.Fprintf(w, "note: the hints shown cannot be remembered here (%v); this is the first hint of step %d.\n\n", stateErr, s)
		printHint(w, list, 0, s, "")
		fmt.Fprintf(w, "\n%d more hint(s) for step %d in %s/HINTS.md.\n", len(list)-1, s, l.Dir())
		return nil
	}
	state, note := loadHintState(stateFile)
	if note != "" {
		fmt.Fprintf(w, "note: %s\n\n", note)
	}
	// The first hint not shown yet whose heading quotes the failure on
	// screen. When every hint quoting it was shown, the most explicit of
	// them again; when none quotes it, the first not shown yet, in the
	// file's order, said to be for another failure.
	failure := ""
	if len(failing.Failed) > 0 {
		failure = strings.Join(failing.Failed[0].failureLines(), "\n")
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
	again := "run go run ./cmd/workshop hint " + l.Num() + " again"
	if inWatch {
		again = "type hint again"
	}
	if pick < 0 && firstMatch >= 0 {
		last := lastOfChain(list, firstMatch)
		fmt.Fprintf(w, "You have seen every hint for this failure; here is the most explicit again.\n\n")
		printHint(w, list, last, s, failure)
		if left := len(list) - seen; left > 0 {
			fmt.Fprintf(w, "\nStep %d has %d more hint(s) for other failures: %s once the failure changes. go run ./cmd/workshop solution %s shows the answer.\n", s, left, again, l.Num())
		} else {
			fmt.Fprintf(w, "\nThat was the last hint for step %d. go run ./cmd/workshop hint %s --reset starts the hints again; go run ./cmd/workshop solution %s shows the answer.\n", s, l.Num(), l.Num())
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
		fmt.Fprintf(w, "You have seen all %d hints for step %d, and none quotes this failure; here is the last again.\n\n", len(list), s)
		printHint(w, list, pick, s, "")
		fmt.Fprintf(w, "\nThat was the last hint for step %d. go run ./cmd/workshop hint %s --reset starts the hints again; go run ./cmd/workshop solution %s shows the answer.\n", s, l.Num(), l.Num())
		return nil
	}
	if !matched {
		fmt.Fprintf(w, "No hint quotes this failure; here is the next you have not read for step %d.\n\n", s)
		failure = ""
	}
	printHint(w, list, pick, s, failure)
	state.setShown(root, l.Name, s, shown|1<<pick)
	if err := state.save(stateFile); err != nil {
		fmt.Fprintf(w, "\nnote: could not remember this hint (%v): the next call shows it again.\n", err)
	}
	left := len(list) - seen - 1
	chainLeft := 0
	for i, h := range list {
		if i != pick && h.Symptom == list[pick].Symptom && shown&(1<<i) == 0 {
			chainLeft++
		}
	}
	which := "this failure"
	if !matched {
		which = "that failure"
	}
	switch {
	case left == 0:
		fmt.Fprintf(w, "\nThat was the last hint for step %d.\n", s)
	case chainLeft == 0:
		fmt.Fprintf(w, "\nThat was the last hint for %s; step %d has %d more for other failures: %s once the failure changes.\n", which, s, left, again)
	case chainLeft == 1:
		fmt.Fprintf(w, "\n1 more hint for %s: %s.\n", which, again)
	default:
		fmt.Fprintf(w, "\n%d more hints for %s: %s.\n", chainLeft, which, again)
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
func lastOfChain(list []hint, i int) int {
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
func printHint(w io.Writer, list []hint, i, step int, failure string) {
	k, n := 0, 0
	for j, h := range list {
		if h.Symptom == list[i].Symptom {
			n++
			if j <= i {
				k++
			}
		}
	}
	which, quote := "this failure", matchingQuote(list[i].Symptom, failure)
	if quote == "" {
		which = "the failure"
		if m := quotedText.FindString(list[i].Symptom); m != "" {
			quote = m
		} else {
			quote = list[i].Symptom
		}
	}
	fmt.Fprintf(w, "Step %d, hint %d of %d for %s: %s\n\n", step, k, n, which, quote)
	fmt.Fprintln(w, list[i].Body)
}
