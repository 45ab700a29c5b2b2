package contract

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// A failure tells its story when the test's own words (not testify's
// framing, not a file:line prefix, not a runtime dump) say which step it
// belongs to and carry at least one number from the run: "step 3: payment
// answered 503 to 5 charges in a row; the breaker let all 5 through".
// Clause 4 asks it of every failure of the starter and of every mutant.

var (
	// goPrefix is the "file_test.go:123: " that t.Error puts before a
	// message.
	goPrefix = regexp.MustCompile(`^\s*[\w./\\-]+\.go:[0-9]+:\s?`)
	// pathLine is a line of testify's Error Trace: a bare file:line.
	pathLine = regexp.MustCompile(`^\s*[\w./\\-]+\.go:[0-9]+\s*$`)
	// testifyLabel starts one field of testify's failure block.
	testifyLabel = regexp.MustCompile(`^\s*(Error Trace|Error|Test|Messages|expected|actual|Diff|[-+]{3} (Expected|Actual)):`)
	// runtimeDump starts what the runtime prints: a panic, a goroutine
	// trace, a race report.
	runtimeDump = regexp.MustCompile(`^\s*(panic: |goroutine [0-9]+ \[|WARNING: DATA RACE|==================|fatal error: )`)
	aDigit      = regexp.MustCompile(`[0-9]`)
)

// ownWords returns the lines of a failure that the test wrote itself:
// messages of t.Error and friends, and of testify the Messages field only.
func ownWords(lines []string) []string {
	var out []string
	testify := false
	for _, l := range lines {
		if strings.Contains(l, "Error Trace:") {
			testify = true
		}
	}
	inMessages := false
	for _, l := range lines {
		if runtimeDump.MatchString(l) {
			break
		}
		if m := testifyLabel.FindStringSubmatch(l); m != nil {
			inMessages = m[1] == "Messages"
			if inMessages {
				out = append(out, strings.TrimSpace(l[strings.Index(l, ":")+1:]))
			}
			continue
		}
		if testify && !inMessages {
			continue
		}
		if pathLine.MatchString(l) {
			continue
		}
		out = append(out, goPrefix.ReplaceAllString(l, ""))
	}
	return out
}

// storyProblem says what a failure of a step-n test lacks, or "".
// A data race tells its story through check, which condenses the race
// detector's report to the step and the two lines (race.go).
func storyProblem(t *gotest.Test, n int) string {
	for _, l := range t.Output {
		if strings.Contains(l, "WARNING: DATA RACE") {
			return ""
		}
	}
	words := strings.Join(ownWords(t.FailureLines()), "\n")
	stepRE := regexp.MustCompile(fmt.Sprintf(`(?i)\bstep\s*%d\b`, n))
	switch {
	case strings.TrimSpace(words) == "":
		return fmt.Sprintf("%s fails without a message of its own (only testify's or the runtime's words)", t.Name)
	case !stepRE.MatchString(words):
		return fmt.Sprintf("%s fails without saying \"step %d\"", t.Name, n)
	case !aDigit.MatchString(stepRE.ReplaceAllString(words, "")):
		return fmt.Sprintf("%s fails without a number from the run in its message", t.Name)
	}
	return ""
}

// storyProblems lists the failures of a run that do not tell their story,
// each with the first lines of its output.
func storyProblems(steps []lab.StepResult) []string {
	var problems []string
	for _, s := range steps {
		for _, t := range s.Failed {
			if p := storyProblem(t, s.N); p != "" {
				problems = append(problems, p+"; its output begins:")
				for _, line := range repo.FirstLines(t.FailureLines(), 4) {
					problems = append(problems, "    "+line)
				}
			}
		}
	}
	return problems
}
