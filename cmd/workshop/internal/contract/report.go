package contract

import (
	"fmt"
	"io"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// report prints verify's checks, one line each, and counts them. A line is
// "ok   <what>", "FAIL <what>: <why>" with up to 25 indented lines of
// detail, or "note <message>" (not counted).
type report struct {
	w              io.Writer
	passed, failed int
}

func (r *report) ok(what string) {
	r.passed++
	fmt.Fprintf(r.w, "ok   %s\n", what)
}

func (r *report) fail(what, why string, detail []string) {
	r.failed++
	fmt.Fprintf(r.w, "FAIL %s: %s\n", what, why)
	for _, line := range repo.FirstLines(detail, 25) {
		fmt.Fprintf(r.w, "       %s\n", line)
	}
}

// check reports ok when problems is empty, else a failure listing them.
func (r *report) check(what string, problems []string) {
	switch len(problems) {
	case 0:
		r.ok(what)
	case 1:
		r.fail(what, problems[0], nil)
	default:
		r.fail(what, fmt.Sprintf("%d problems", len(problems)), problems)
	}
}

func (r *report) note(msg string) {
	fmt.Fprintf(r.w, "note %s\n", msg)
}

// summary prints the closing "N passed, M failed" line.
func (r *report) summary() {
	fmt.Fprintf(r.w, "\n%d passed, %d failed\n", r.passed, r.failed)
}
