package contract

import (
	"fmt"
	"io"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// Report prints verify's checks, one line each, and counts them. A line is
// "ok   <what>", "FAIL <what>: <why>" with up to 25 indented lines of
// detail, or "note <message>" (not counted).
type Report struct {
	W              io.Writer
	passed, Failed int
}

func (r *Report) ok(what string) {
	r.passed++
	fmt.Fprintf(r.W, "ok   %s\n", what)
}

func (r *Report) fail(what, why string, detail []string) {
	r.Failed++
	fmt.Fprintf(r.W, "FAIL %s: %s\n", what, why)
	for _, line := range repo.FirstLines(detail, 25) {
		fmt.Fprintf(r.W, "       %s\n", line)
	}
}

// check reports ok when problems is empty, else a failure listing them.
func (r *Report) check(what string, problems []string) {
	switch len(problems) {
	case 0:
		r.ok(what)
	case 1:
		r.fail(what, problems[0], nil)
	default:
		r.fail(what, fmt.Sprintf("%d problems", len(problems)), problems)
	}
}

func (r *Report) note(msg string) {
	fmt.Fprintf(r.W, "note %s\n", msg)
}

// summary prints the closing "N passed, M failed" line.
func (r *Report) summary() {
	fmt.Fprintf(r.W, "\n%d passed, %d failed\n", r.passed, r.Failed)
}
