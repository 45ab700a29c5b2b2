package contract

import (
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
)

func TestStoryProblem(t *testing.T) {
	cases := []struct {
		name string
		out  string
		want string // "" for a failure that tells its story
	}{
		{"t.Errorf with step and numbers", "    breaker_test.go:88: step 3: payment answered 503 to 5 charges; the breaker let all 5 through", ""},
		{"no step", "    breaker_test.go:88: the breaker let 5 calls through", `without saying "step 3"`},
		{"another step", "    breaker_test.go:88: step 2: 5 calls", `without saying "step 3"`},
		{"no number but the step's and the file's", "    breaker_test.go:88: step 3: the breaker stayed closed", "without a number"},
		{"testify without a message", strings.Join([]string{
			"    breaker_test.go:91: ",
			"        \tError Trace:\tbreaker_test.go:91",
			"        \tError:      \t\"19\" is not less than or equal to \"1\"",
			"        \tTest:       \tTestStep3X",
		}, "\n"), "without a message of its own"},
		{"testify with a story in Messages", strings.Join([]string{
			"    breaker_test.go:91: ",
			"        \tError Trace:\tbreaker_test.go:91",
			"        \tError:      \t\"19\" is not less than or equal to \"1\"",
			"        \tTest:       \tTestStep3X",
			"        \tMessages:   \tstep 3: 19 charges reached payment, want at most 1",
		}, "\n"), ""},
		{"testify whose step is only in the Error field", strings.Join([]string{
			"        \tError Trace:\tbreaker_test.go:91",
			"        \tError:      \tstep 3 expected 19",
			"        \tMessages:   \tthe breaker failed",
		}, "\n"), `without saying "step 3"`},
		{"a panic", "panic: runtime error: index out of range [5] with length 3 [recovered]\ngoroutine 7 [running]:\nbreaker.go:12", "without a message of its own"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := storyProblem(&gotest.Test{Name: "TestStep3X", Output: strings.Split(c.out, "\n")}, 3)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
