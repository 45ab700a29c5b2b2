package gotest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
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

// Run is everything one `go test -json` invocation reported, by package.
type Run struct {
	Packages map[string]*Package
	// Other holds output that belongs to no package: non-JSON lines and
	// build output of packages whose fail event never came.
	Other []string
}

// Package is the outcome of one package.
type Package struct {
	Path        string
	Action      string // "pass", "fail", "skip", or "" when it never finished
	BuildFailed bool
	BuildOutput []string // compiler (and vet) errors when BuildFailed
	Output      []string // output not attributed to any test
	Tests       map[string]*Test
}

// Test is the outcome of one top-level test, its subtests folded in.
type Test struct {
	Name   string
	Action string   // "pass", "fail", "skip", or "" when it started but never finished
	Output []string // its output and its subtests', without trailing newlines
}

// ScoreCardHeading begins the score card a lab's experiment may print
// (lab 10's, gameday.Card.Write); scoreLine ends it.
const ScoreCardHeading = "The game day's score card"

// ExperimentPattern matches a lab's experiment test for go test -run/-skip.
const ExperimentPattern = `^TestStep[0-9]+Experiment$`

// Compiled reports whether the package at path built (its tests ran).
func (r *Run) Compiled(path string) bool {
	p, ok := r.Packages[path]
	return ok && !p.BuildFailed
}

// Merge adds the tests of other, a second run of the same packages with
// other tests, to r. A package fails if it failed in either run.
func (r *Run) Merge(other *Run) {
	for path, op := range other.Packages {
		p, ok := r.Packages[path]
		if !ok {
			r.Packages[path] = op
			continue
		}
		for name, t := range op.Tests {
			if p.Tests == nil {
				p.Tests = map[string]*Test{}
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

// Parse reads a `go test -json` stream. Lines that are not JSON
// events (a go command too old to emit build events, say) land in Other.
func Parse(r io.Reader) *Run {
	p := NewParser()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		p.Line(sc.Bytes())
	}
	return p.Finish()
}

// Parser reads a `go test -json` stream line by line, so that a caller
// can act on each package as soon as it finishes.
type Parser struct {
	run   *Run
	build map[string][]string // build output by ImportPath
	// events holds each package's own event lines, as go test wrote them
	// (for the status cache); nil: not kept.
	Events map[string]*bytes.Buffer
}

// NewParser returns a Parser with nothing read yet.
func NewParser() *Parser {
	return &Parser{run: &Run{Packages: map[string]*Package{}}, build: map[string][]string{}}
}

// KeepEvents makes the parser keep each package's event lines.
func (p *Parser) KeepEvents() { p.Events = map[string]*bytes.Buffer{} }

// Line reads one line of the stream. It returns the package the line
// finished (its pass, fail or skip event), or nil.
func (p *Parser) Line(line []byte) *Package {
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
	if p.Events != nil {
		b := p.Events[ev.Package]
		if b == nil {
			b = &bytes.Buffer{}
			p.Events[ev.Package] = b
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	pkg := run.Pkg(ev.Package)
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
		t = &Test{Name: top}
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

// Finish ends the stream and returns everything it reported.
func (p *Parser) Finish() *Run {
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

// Pkg returns the result of the package at import path, adding an empty
// one when the run had none.
func (run *Run) Pkg(path string) *Package {
	p := run.Packages[path]
	if p == nil {
		p = &Package{Path: path, Tests: map[string]*Test{}}
		run.Packages[path] = p
	}
	return p
}

// BuildErrors returns the compiler errors of a package that failed to build,
// or the package's own output when the test binary failed without any test
// failing (a panic in init, a timeout).
func (p *Package) BuildErrors() []string {
	if len(p.BuildOutput) > 0 {
		return p.BuildOutput
	}
	return p.Output
}

// FailureLines returns a failing test's output without the framing lines
// the testing package adds (=== RUN, --- FAIL, ...), so what is left is
// the failure message the test wrote.
func (t *Test) FailureLines() []string {
	var out []string
	card := -1 // where the score card's heading is in out, while inside one
	for _, l := range t.Output {
		trimmed := strings.TrimSpace(l)
		if framingLine(trimmed) {
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, ScoreCardHeading):
			card = len(out)
		case card >= 0 && ScoreLine.MatchString(l):
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

// ScoreLine matches the last line of the game day's score card, as
// gameday.ScoreLine writes it:
//
//	The game day's score: yours 83 of 100 (starter 59, reference 100; seed 7)
var ScoreLine = regexp.MustCompile(`^\s*The game day's score: yours (\d{1,3}) of 100 \(starter (\d{1,3}), reference (\d{1,3}); seed (\d+)\)\s*$`)
