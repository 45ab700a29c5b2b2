package class

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

// A step title is data, never an expression GitHub Actions would run, and
// quotes, colons and # stay inside the YAML string.
func TestWorkflowQuotesStepTitles(t *testing.T) {
	info := lab.Info{Lab: lab.Lab{Name: "01-timeouts"}, Steps: []int{1}}
	info.Tests.Tests = []string{"TestStep1Budget"}
	info.Readme.Steps = map[int]string{1: `Use ${{ github.token }} and "quotes": # not a comment`}
	got := string(Workflow([]lab.Info{info}))
	if strings.Contains(got, "${{ github.token") {
		t.Errorf("the title's expression reached the workflow:\n%s", got)
	}
	want := `      - name: "Lab 01 timeouts, step 1: Use $ {{ github.token }} and \"quotes\": # not a comment"`
	if !strings.Contains(got, want+"\n") {
		t.Errorf("the step's name should be %s; the workflow is:\n%s", want, got)
	}
	if !strings.Contains(got, `command: "go test -race -v -run '^(TestStep1Budget)$' ./labs/01-timeouts/ 2>&1 | tee /dev/stderr | grep -cE '^--- PASS: (TestStep1Budget) ' | grep -qx 1"`) ||
		!strings.Contains(got, "runners: lab01-step1\n") {
		t.Errorf("the step's grader or the reporter is missing:\n%s", got)
	}
}

// A grader passes only when go test reports every test of its step
// passed: with a test deleted (go test passes when -run matches nothing),
// or one failing, the count is short and the last grep fails.
func TestGraderCommandCountsEveryTestOfTheStep(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh here; the grader runs on Ubuntu")
	}
	info := lab.Info{Lab: lab.Lab{Name: "01-timeouts"}}
	cmd := graderCommand(info, lab.StepResult{N: 2, Tests: []string{"TestStep2A", "TestStep2B"}})
	const goTest = "go test -race -v -run '^(TestStep2A|TestStep2B)$' ./labs/01-timeouts/ 2>&1"
	if !strings.HasPrefix(cmd, goTest+" | ") {
		t.Fatalf("the grader's command %q does not start with %q", cmd, goTest)
	}
	for _, c := range []struct {
		name, output string
		pass         bool
	}{
		{"both passed", "=== RUN   TestStep2A\n--- PASS: TestStep2A (0.00s)\n=== RUN   TestStep2B\n    --- PASS: TestStep2B/sub (0.00s)\n--- PASS: TestStep2B (0.01s)\nPASS\n", true},
		{"one failed", "--- PASS: TestStep2A (0.00s)\n--- FAIL: TestStep2B (0.00s)\nFAIL\n", false},
		{"deleted", "testing: warning: no tests to run\nPASS\nok  \tx\t0.01s [no tests to run]\n", false},
		{"only a subtest", "    --- PASS: TestStep2A/x (0.00s)\n--- PASS: TestStep2B (0.00s)\n", false},
		{"a prefix", "--- PASS: TestStep2AB (0.00s)\n--- PASS: TestStep2B (0.00s)\n", false},
	} {
		script := "printf '%s' " + shellQuote(c.output) + strings.TrimPrefix(cmd, goTest)
		err := exec.Command("sh", "-c", script).Run()
		if (err == nil) != c.pass {
			t.Errorf("%s: the grader passed=%v (%v), want %v", c.name, err == nil, err, c.pass)
		}
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
