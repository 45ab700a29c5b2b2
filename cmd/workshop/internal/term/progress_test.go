package term

import (
	"bytes"
	"strings"
	"testing"
)

// TestAboveClearsTheStatusLine: a write to the other stream clears the
// status line first and draws it again after, and the line fits 80 columns.
func TestAboveClearsTheStatusLine(t *testing.T) {
	var status, report bytes.Buffer
	p := &Progress{w: &status, Terminal: true}
	p.line = func() string { return strings.Repeat("running lab 05-breaker, ", 10) }
	p.mu.Lock()
	p.draw()
	p.mu.Unlock()
	if n := len([]rune(status.String())); n > statusWidth {
		t.Errorf("the status line takes %d columns, want at most %d", n, statusWidth)
	}
	drawn := status.Len()
	if _, err := p.Above(&report).Write([]byte("ok   clause 10\n")); err != nil {
		t.Fatal(err)
	}
	after := status.String()[drawn:]
	if !strings.HasPrefix(after, "\r\033[K") || !strings.Contains(after[4:], "running lab") {
		t.Errorf("around the report's write the status stream got %q; want the line cleared, then drawn again", after)
	}
	if report.String() != "ok   clause 10\n" {
		t.Errorf("the report got %q", report.String())
	}
}
