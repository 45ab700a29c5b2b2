package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// testEvent is one line of `go test -json` (cmd/test2json), including the
// build events the go command adds since Go 1.24.
type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output and build-fail events
	FailedBuild string // package fail event after a build failure
}

// testRun is everything one `go test -json` invocation reported, by package.
type testRun struct {
	Packages map[string]*pkgResult
	// Other holds output that belongs to no package: non-JSON lines and
	// build output of packages whose fail event never came.
	Other []string
}

// pkgResult is the outcome of one package.
type pkgResult struct {
	Path        string
	Action      string // "pass", "fail", "skip", or "" when it never finished
	BuildFailed bool
	BuildOutput []string // compiler (and vet) errors when BuildFailed
	Output      []string // output not attributed to any test
	Tests       map[string]*testResult
}

// testResult is the outcome of one top-level test, its subtests folded in.
type testResult struct {
	Name   string
	Action string   // "pass", "fail", "skip", or "" when it started but never finished
	Output []string // its output and its subtests', without trailing newlines
}

// scoreCardHeading begins the score card a lab's experiment may print
// (lab 10's, gameday.Card.Write); scoreLine ends it.
const scoreCardHeading = "The game day's score card"

// experimentPattern matches a lab's experiment test for go test -run/-skip.
const experimentPattern = `^TestStep[0-9]+Experiment$`

// compiled reports whether the package at path built (its tests ran).
func (r *testRun) compiled(path string) bool {
	p, ok := r.Packages[path]
	return ok && !p.BuildFailed
}

// merge adds the tests of other, a second run of the same packages with
// other tests, to r. A package fails if it failed in either run.
func (r *testRun) merge(other *testRun) {
	for path, op := range other.Packages {
		p, ok := r.Packages[path]
		if !ok {
			r.Packages[path] = op
			continue
		}
		for name, t := range op.Tests {
			if p.Tests == nil {
				p.Tests = map[string]*testResult{}
			}
			p.Tests[name] = t
		}
		p.Output = append(p.Output, op.Output...)
		if op.Action == "fail" || op.BuildFailed {
			p.Action = "fail"
		}
		p.BuildFailed = p.BuildFailed || op.BuildFailed
		p.BuildOutput = append(p.BuildOutput, op.BuildOutput...)
	}
	r.Other = append(r.Other, other.Other...)
}

// parseTestJSON reads a `go test -json` stream. Lines that are not JSON
// events (a go command too old to emit build events, say) land in Other.
func parseTestJSON(r io.Reader) *testRun {
	p := newTestParser()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		p.line(sc.Bytes())
	}
	return p.finish()
}

// testParser reads a `go test -json` stream line by line, so that a caller
// can act on each package as soon as it finishes.
type testParser struct {
	run   *testRun
	build map[string][]string // build output by ImportPath
	// events holds each package's own event lines, as go test wrote them
	// (for the status cache); nil: not kept.
	events map[string]*bytes.Buffer
}

func newTestParser() *testParser {
	return &testParser{run: &testRun{Packages: map[string]*pkgResult{}}, build: map[string][]string{}}
}

// keepEvents makes the parser keep each package's event lines.
func (p *testParser) keepEvents() { p.events = map[string]*bytes.Buffer{} }

// line reads one line of the stream. It returns the package the line
// finished (its pass, fail or skip event), or nil.
func (p *testParser) line(line []byte) *pkgResult {
	run := p.run
	var ev testEvent
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
		if s := strings.TrimRight(string(line), "\r"); s != "" {
			run.Other = append(run.Other, s)
		}
		return nil
	}
	switch ev.Action {
	case "build-output":
		p.build[ev.ImportPath] = append(p.build[ev.ImportPath], strings.TrimRight(ev.Output, "\r\n"))
		return nil
	case "build-fail":
		return nil
	}
	if ev.Package == "" {
		return nil
	}
	if p.events != nil {
		b := p.events[ev.Package]
		if b == nil {
			b = &bytes.Buffer{}
			p.events[ev.Package] = b
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	pkg := run.pkg(ev.Package)
	if ev.Test == "" {
		switch ev.Action {
		case "output":
			pkg.Output = append(pkg.Output, strings.TrimRight(ev.Output, "\r\n"))
		case "pass", "fail", "skip":
			pkg.Action = ev.Action
			if ev.FailedBuild != "" {
				pkg.BuildFailed = true
				pkg.BuildOutput = append(pkg.BuildOutput, p.build[ev.FailedBuild]...)
				delete(p.build, ev.FailedBuild)
			}
			return pkg
		}
		return nil
	}
	top, _, sub := strings.Cut(ev.Test, "/")
	t := pkg.Tests[top]
	if t == nil {
		t = &testResult{Name: top}
		pkg.Tests[top] = t
	}
	switch ev.Action {
	case "output":
		t.Output = append(t.Output, strings.TrimRight(ev.Output, "\r\n"))
	case "pass", "fail", "skip":
		// With -count=N a test reports N times; a failure in any run
		// must not be hidden by a later pass.
		if !sub && t.Action != "fail" {
			t.Action = ev.Action
		}
	}
	return nil
}

// finish ends the stream and returns everything it reported.
func (p *testParser) finish() *testRun {
	// Build output whose package never reported (a setup failure, say).
	var rest []string
	for ip := range p.build {
		rest = append(rest, ip)
	}
	sort.Strings(rest)
	for _, ip := range rest {
		p.run.Other = append(p.run.Other, p.build[ip]...)
	}
	p.build = map[string][]string{}
	return p.run
}

func (run *testRun) pkg(path string) *pkgResult {
	p := run.Packages[path]
	if p == nil {
		p = &pkgResult{Path: path, Tests: map[string]*testResult{}}
		run.Packages[path] = p
	}
	return p
}

// buildErrors returns the compiler errors of a package that failed to build,
// or the package's own output when the test binary failed without any test
// failing (a panic in init, a timeout).
func (p *pkgResult) buildErrors() []string {
	if len(p.BuildOutput) > 0 {
		return p.BuildOutput
	}
	return p.Output
}

// failureLines returns a failing test's output without the framing lines
// the testing package adds (=== RUN, --- FAIL, ...), so what is left is
// the failure message the test wrote.
func (t *testResult) failureLines() []string {
	var out []string
	card := -1 // where the score card's heading is in out, while inside one
	for _, l := range t.Output {
		trimmed := strings.TrimSpace(l)
		if framingLine(trimmed) {
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, scoreCardHeading):
			card = len(out)
		case card >= 0 && scoreLine.MatchString(l):
			// The card is a wide table of some fifty lines: its score says
			// where the plan stands, and go test -v prints the rest.
			heading := strings.TrimSpace(out[card])
			out = append(out[:card], fmt.Sprintf("%s: %d lines, left out here (go test -v -run Experiment prints it whole)", heading, len(out)-card), l)
			card = -1
			continue
		}
		out = append(out, l)
	}
	// Drop leading blank lines.
	for len(out) > 0 && strings.TrimSpace(out[0]) == "" {
		out = out[1:]
	}
	return out
}

func framingLine(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// stepTestName matches a well-formed step test name and captures the step.
var stepTestName = regexp.MustCompile(`^TestStep([0-9]+)([A-Z][^/]*)?$`)

// stepOf returns the step number of a TestStep<N>... test, or 0.
func stepOf(test string) int {
	m := stepTestName.FindStringSubmatch(test)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return n
}

// stepState is the state of one step.
type stepState int

const (
	stepPassed  stepState = iota // every test of the step passed
	stepFailing                  // at least one test failed
	stepNotRun                   // no test failed, but one never ran or never finished
	stepNoTests                  // the step has no test (a README step without a test)
)

func (s stepState) String() string {
	switch s {
	case stepPassed:
		return "passed"
	case stepFailing:
		return "failing"
	case stepNotRun:
		return "not run"
	default:
		return "no tests"
	}
}

// stepResult is one step's outcome.
type stepResult struct {
	N      int
	State  stepState
	Tests  []string      // the step's test names, in source order
	Failed []*testResult // its failing tests, in source order
	NotRun []string      // its tests that never ran or never finished
}

// stepResults groups a package's results into steps. tests lists the step
// test names known from the source (nil means: use the names that ran);
// steps lists step numbers that must appear even without a test.
func stepResults(p *pkgResult, tests []string, steps []int) []stepResult {
	if tests == nil && p != nil {
		for name := range p.Tests {
			tests = append(tests, name)
		}
		sort.Strings(tests)
	}
	byStep := map[int]*stepResult{}
	get := func(n int) *stepResult {
		s := byStep[n]
		if s == nil {
			s = &stepResult{N: n, State: stepNoTests}
			byStep[n] = s
		}
		return s
	}
	for _, n := range steps {
		get(n)
	}
	for _, name := range tests {
		n := stepOf(name)
		if n == 0 {
			continue
		}
		s := get(n)
		s.Tests = append(s.Tests, name)
		var t *testResult
		if p != nil {
			t = p.Tests[name]
		}
		switch {
		case t == nil || t.Action == "":
			s.NotRun = append(s.NotRun, name)
		case t.Action == "fail":
			s.Failed = append(s.Failed, t)
		}
	}
	out := make([]stepResult, 0, len(byStep))
	for _, s := range byStep {
		switch {
		case len(s.Tests) == 0:
			s.State = stepNoTests
		case len(s.Failed) > 0:
			s.State = stepFailing
		case len(s.NotRun) > 0:
			s.State = stepNotRun
		default:
			s.State = stepPassed
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out
}
