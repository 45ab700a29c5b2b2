package labrun

import (
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
)

func TestCompleteRun(t *testing.T) {
	pkg := func(action string, tests map[string]*gotest.Test, output ...string) *gotest.Package {
		return &gotest.Package{Action: action, Tests: tests, Output: output}
	}
	passed := func() map[string]*gotest.Test {
		return map[string]*gotest.Test{"TestStep1A": {Name: "TestStep1A", Action: "pass"}, "TestStep2A": {Name: "TestStep2A", Action: "fail"}}
	}
	cases := map[string]struct {
		pkg  *gotest.Package
		want bool
	}{
		"a failing run that finished": {pkg("fail", passed()), true},
		"a passing run":               {pkg("pass", passed()), true},
		"nothing":                     {nil, false},
		"a build failure":             {&gotest.Package{Action: "fail", BuildFailed: true, Tests: passed()}, false},
		"no final event":              {pkg("", passed()), false},
		"no test ran":                 {pkg("fail", nil), false},
		"a test that never finished": {pkg("fail", map[string]*gotest.Test{
			"TestStep1A": {Name: "TestStep1A", Action: "pass"}, "TestStep2A": {Name: "TestStep2A"}}), false},
		"the timeout's panic in a test's output": {pkg("fail", map[string]*gotest.Test{
			"TestStep1A": {Name: "TestStep1A", Action: "fail", Output: []string{"panic: test timed out after 3m0s"}}}), false},
		"a killed binary": {pkg("fail", passed(), "signal: killed"), false},
	}
	for name, c := range cases {
		if got := completeRun(c.pkg); got != c.want {
			t.Errorf("%s: completeRun = %v, want %v", name, got, c.want)
		}
	}
}
