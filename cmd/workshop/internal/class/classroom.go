package class

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

// WorkflowPath is where GitHub Classroom's autograding workflow lives,
// from the repository's root.
const WorkflowPath = ".github/workflows/classroom.yml"

// WorkflowUpdate is the command that writes WorkflowPath again from the
// labs' tests.
const WorkflowUpdate = "go test ./cmd/workshop -run TestClassroomWorkflow -update"

// Workflow returns GitHub Classroom's autograding workflow for the labs
// infos (in order): a GitHub Actions workflow that, on every push, sets up
// the Go of go.mod, downloads the modules and builds every lab's tests
// once, then runs one classroom-resources/autograding-command-grader step
// per lab step, worth 1 point, whose command (graderCommand) runs the
// step's tests as the step's test_code of status -json does (the same
// tests status runs, without -race), and last the grading reporter over
// all of them. A lab's points are its steps passed; the game day's steps
// are its stages. A step with no test gets no grader.
//
// Each grader's id is labNN-stepM; the reporter reads its result from the
// environment variable LABNN-STEPM_RESULTS, as Classroom's own workflows
// name them.
func Workflow(infos []lab.Info) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `# GitHub Classroom's autograding: one grader per lab step, 1 point each,
# so that a lab's points are its steps passed. Each command runs the tests
# "go run ./cmd/workshop status -json" names in the step's test_code, and
# passes when go test reports every one of them passed.
# Written from the labs' tests by: %s
name: Autograding
"on":
  push:
  workflow_dispatch:
  repository_dispatch:
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  autograding:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    timeout-minutes: 45
    steps:
      - name: Check out the learner's repository
        uses: actions/checkout@v4
      - name: Set up the Go that go.mod names
        uses: actions/setup-go@v5
        with:
          go-version-file: go.mod
      - name: Download the modules and build every lab's tests once, with and without -race
        continue-on-error: true # a lab that does not compile fails its own graders
        run: |
          go mod download
          go test -count=1 -run '^$' ./labs/...
          go test -race -count=1 -run '^$' ./labs/...
`, WorkflowUpdate)
	var ids []string
	for _, info := range infos {
		for _, s := range lab.StepResults(nil, info.Tests.Tests, info.Steps) {
			cmd := graderCommand(info, s)
			if cmd == "" {
				continue
			}
			id := fmt.Sprintf("lab%s-step%d", info.Num(), s.N)
			ids = append(ids, id)
			name := yamlString(noExpression(fmt.Sprintf("Lab %s %s, %s", info.Num(), info.Title(), info.StepTitle(s.N))))
			fmt.Fprintf(&b, `      - name: %s
        id: %s
        uses: classroom-resources/autograding-command-grader@v1
        with:
          test-name: %s
          command: %s
          timeout: 10
          max-score: 1
`, name, id, name, yamlString(cmd))
		}
	}
	b.WriteString(`      - name: Report the points to GitHub Classroom
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
`)
	for _, id := range ids {
		fmt.Fprintf(&b, "          %s_RESULTS: \"${{ steps.%s.outputs.result }}\"\n", strings.ToUpper(id), id)
	}
	fmt.Fprintf(&b, "        with:\n          runners: %s\n", strings.Join(ids, ","))
	return []byte(b.String())
}

// graderCommand is the shell command (sh, on the grader's Ubuntu) that
// grades step s: its test_code with -v, passing only when go test reports
// each of the step's tests passed by name, so that a step whose tests were
// deleted or renamed earns no point (go test passes when -run matches
// nothing). It is "" for a step with no test.
//
// The step's tests run with -race, as check runs them, so that a mutant
// the race detector alone catches (a breaker without its mutex) earns no
// point; the experiment, which measures, and the game day, whose learners
// edit a plan (plain data), run without it, as check and verify run them.
func graderCommand(info lab.Info, s lab.StepResult) string {
	if len(s.Tests) == 0 {
		return ""
	}
	names := strings.Join(s.Tests, "|")
	race := "-race "
	if slices.Contains(info.ExperimentSteps(), s.N) || capstone(info) {
		race = ""
	}
	return fmt.Sprintf("go test %s-v -run '^(%s)$' %s 2>&1 | tee /dev/stderr | grep -cE '^--- PASS: (%s) ' | grep -qx %d",
		race, names, info.Pattern(), names, len(s.Tests))
}

// capstone reports whether info's tests import the game day's package:
// lab 10, whose tests run without -race.
func capstone(info lab.Info) bool {
	return slices.ContainsFunc(info.Tests.Imports, func(p string) bool { return strings.HasSuffix(p, lab.GameDayPackage) })
}

// noExpression breaks every "${{" in s, which GitHub Actions would
// evaluate as an expression in a step's name or inputs.
func noExpression(s string) string {
	return strings.ReplaceAll(s, "${{", "$ {{")
}

// yamlString writes s as a double-quoted YAML scalar; Go's quoting of
// printable text is valid YAML (\", \\, \n, \uXXXX).
func yamlString(s string) string {
	return strconv.Quote(s)
}
