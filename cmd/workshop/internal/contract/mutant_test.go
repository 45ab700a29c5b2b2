package contract

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

func TestMutantVerdict(t *testing.T) {
	m := lab.Mutant{Name: "m", Step: 2}
	run := func(failed2 string, notRun2 bool, failed1 bool) lab.Outcome {
		var steps []lab.StepResult
		s1 := lab.StepResult{N: 1, State: lab.StepPassed, Tests: []string{"TestStep1A"}}
		if failed1 {
			s1.State, s1.Failed = lab.StepFailing, []*gotest.Test{{Name: "TestStep1A"}}
		}
		s2 := lab.StepResult{N: 2, State: lab.StepPassed, Tests: []string{"TestStep2A", "TestStep2B"}}
		switch {
		case notRun2:
			s2.State, s2.NotRun = lab.StepNotRun, []string{"TestStep2A", "TestStep2B"}
		case failed2 != "":
			s2.State, s2.Failed = lab.StepFailing, []*gotest.Test{{Name: failed2}}
		}
		steps = append(steps, s1, s2)
		return lab.Outcome{Steps: steps, Pkg: &gotest.Package{Output: []string{"panic: boom"}}}
	}
	all := map[string]bool{"TestStep1A": true, "TestStep2A": true, "TestStep2B": true}
	cases := []struct {
		name      string
		o         lab.Outcome
		refPassed map[string]bool
		want      string
		also      []int
	}{
		{"caught", run("TestStep2A", false, false), all, "", nil},
		{"caught, step 1 fails too", run("TestStep2A", false, true), all, "", []int{1}},
		{"the failing test fails on the reference too", run("TestStep2A", false, false), map[string]bool{"TestStep2A": false, "TestStep2B": true}, "fail on the reference too; no test that passes", nil},
		{"the whole step fails on the reference", run("TestStep2A", false, false), map[string]bool{"TestStep2A": false, "TestStep2B": false}, "not checked: step 2 fails on the reference too", nil},
		{"crashed before step 2", run("", true, true), all, "step 2 did not run or did not finish", []int{1}},
		{"another step fails", run("", false, true), all, "step 2 passes against the mutant (failing instead: step 1)", []int{1}},
		{"nothing fails", run("", false, false), all, "every test passes against the mutant", nil},
	}
	for _, c := range cases {
		why, _, also := mutantVerdict(c.o, m, c.refPassed)
		if c.want == "" && why != "" || c.want != "" && !strings.Contains(why, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, why, c.want)
		}
		if fmt.Sprint(also) != fmt.Sprint(c.also) {
			t.Errorf("%s: also fails %v, want %v", c.name, also, c.also)
		}
	}
}
