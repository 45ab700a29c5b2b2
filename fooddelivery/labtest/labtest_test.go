package labtest_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/labtest"
)

// The demo tests fail on purpose; they only run in a child process started
// by TestFailuresAreReported.
func TestDemo(t *testing.T) {
	switch os.Getenv("LABTEST_DEMO") {
	case "leak":
		labtest.Run(t, labtest.Options{Step: 3, Leak: "the losing request was never cancelled"}, func(t *testing.T) {
			ch := make(chan int)
			go func() { <-ch }()
		})
	case "stuck":
		labtest.Run(t, labtest.Options{Step: 2, Watchdog: time.Minute, Stuck: "PlaceOrder was still retrying"}, func(t *testing.T) {
			for {
				time.Sleep(time.Second)
			}
		})
	case "deadlock":
		labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
			<-make(chan int)
		})
	case "fatal":
		labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
			require.Equal(t, 1, 2, "step 4: one is not two")
			panic("not reached")
		})
	case "panic":
		labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
			var m map[string]int
			m["boom"]++
		})
	default:
		t.Skip("demo only runs in a child process")
	}
}

func TestFailuresAreReported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	cases := []struct {
		demo string
		want []string
	}{
		{"leak", []string{"step 3:", "a leak", "the losing request was never cancelled", "chan receive"}},
		{"stuck", []string{"step 2:", "after 1m0s of virtual time", "PlaceOrder was still retrying"}},
		{"deadlock", []string{"step 1:", "after 10m0s of virtual time", "chan receive"}},
		{"fatal", []string{"step 4: one is not two"}},
		{"panic", []string{"step 5: the code under test panicked: assignment to entry in nil map", "labtest_test.go"}},
	}
	for _, c := range cases {
		t.Run(c.demo, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestDemo$", "-test.v")
			cmd.Env = append(os.Environ(), "LABTEST_DEMO="+c.demo)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the %s demo must fail the test; output:\n%s", c.demo, out)
			assert.Contains(t, string(out), "--- FAIL: TestDemo")
			assert.NotContains(t, string(out), "panic:", "the harness must turn the bubble's panic into a failure")
			for _, w := range c.want {
				assert.Contains(t, string(out), w)
			}
		})
	}
}

func TestPassingScenario(t *testing.T) {
	ran := false
	labtest.Run(t, labtest.Options{}, func(t *testing.T) {
		start := time.Now()
		time.Sleep(5 * time.Minute)
		assert.Equal(t, 5*time.Minute, time.Since(start), "virtual time must advance exactly")
		ran = true
	})
	assert.True(t, ran, "the scenario must have run to the end")
}
