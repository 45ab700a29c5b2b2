package lab

import (
	"regexp"
	"sort"
	"strconv"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
)

// stepTestName matches a well-formed step test name and captures the step.
var stepTestName = regexp.MustCompile(`^TestStep([0-9]+)([A-Z][^/]*)?$`)

// StepOf returns the step number of a TestStep<N>... test, or 0.
func StepOf(test string) int {
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

// StepState is the state of one step.
type StepState int

const (
	StepPassed  StepState = iota // every test of the step passed
	StepFailing                  // at least one test failed
	StepNotRun                   // no test failed, but one never ran or never finished
	StepNoTests                  // the step has no test (a README step without a test)
)

func (s StepState) String() string {
	switch s {
	case StepPassed:
		return "passed"
	case StepFailing:
		return "failing"
	case StepNotRun:
		return "not run"
	default:
		return "no tests"
	}
}

// StepResult is one step's outcome.
type StepResult struct {
	N      int
	State  StepState
	Tests  []string       // the step's test names, in source order
	Failed []*gotest.Test // its failing tests, in source order
	NotRun []string       // its tests that never ran or never finished
}

// StepResults groups a package's results into steps. tests lists the step
// test names known from the source (nil means: use the names that ran);
// steps lists step numbers that must appear even without a test.
func StepResults(p *gotest.Package, tests []string, steps []int) []StepResult {
	if tests == nil && p != nil {
		for name := range p.Tests {
			tests = append(tests, name)
		}
		sort.Strings(tests)
	}
	byStep := map[int]*StepResult{}
	get := func(n int) *StepResult {
		s := byStep[n]
		if s == nil {
			s = &StepResult{N: n, State: StepNoTests}
			byStep[n] = s
		}
		return s
	}
	for _, n := range steps {
		get(n)
	}
	for _, name := range tests {
		n := StepOf(name)
		if n == 0 {
			continue
		}
		s := get(n)
		s.Tests = append(s.Tests, name)
		var t *gotest.Test
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
	out := make([]StepResult, 0, len(byStep))
	for _, s := range byStep {
		switch {
		case len(s.Tests) == 0:
			s.State = StepNoTests
		case len(s.Failed) > 0:
			s.State = StepFailing
		case len(s.NotRun) > 0:
			s.State = StepNotRun
		default:
			s.State = StepPassed
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out
}
