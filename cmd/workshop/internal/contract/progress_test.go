package contract

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

// TestProgressScalesTheMeasuredFinishes: off a terminal, progress prints a
// line per part done; the time left is the last expected finish, scaled by
// how this run's finished parts compare with their expected finishes.
func TestProgressScalesTheMeasuredFinishes(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	expected := map[string]time.Duration{"lab 01-a": 60 * time.Second, "lab 02-b": 90 * time.Second, "go test (project)": 120 * time.Second}
	p := newProgress(&out, expected, []string{"lab 01-a", "lab 02-b", "go test (project)", "benchmarks"})
	p.start, p.now = now, func() time.Time { return now }
	for _, name := range p.order {
		p.begin(name)
	}
	if got := p.summaryLocked(); got != "0 of 4 parts done, about 2m00s left" {
		t.Errorf("at the start: %q, want the last expected finish", got)
	}
	now = now.Add(90 * time.Second) // 1.5 times the measured run's time
	p.end("lab 01-a")
	if got, want := out.String(), "verify: lab 01-a done in 1m30s; 1 of 4 parts done, about 1m30s left\n"; got != want {
		t.Errorf("printed %q, want %q (2m00s x 1.5, less the 1m30s spent)", got, want)
	}
	if line := p.line(); !strings.Contains(line, "running lab 02-b, go test (project), benchmarks") {
		t.Errorf("status line %q does not name the parts running", line)
	}
	now = now.Add(10 * time.Minute)
	for _, name := range []string{"lab 02-b", "go test (project)"} {
		p.end(name)
	}
	if got := p.summaryLocked(); got != "3 of 4 parts done, about 1s left" {
		t.Errorf("late in a slow run: %q, want at least a second", got)
	}
	p.end("benchmarks")
	if !strings.HasSuffix(out.String(), "verify: benchmarks done in 11m30s; 4 of 4 parts done\n") {
		t.Errorf("the last line does not say every part is done:\n%s", out.String())
	}
	p.stop()
}

// TestEveryPartHasAMeasuredFinish: the estimate knows every part verify
// reports, each known lab among them.
func TestEveryPartHasAMeasuredFinish(t *testing.T) {
	var labs []string
	for _, name := range lab.Known {
		labs = append(labs, "lab "+name)
	}
	for _, name := range partNames(labs, true) {
		if partFinishes[name] <= 0 {
			t.Errorf("part %q has no measured finish in partFinishes: measure a verify on a fresh clone and add it", name)
		}
	}
}

// On a warm build cache the first part takes a second, not the minute the
// measured run took: the estimate counts from its end, so that it does not
// shrink the rest to nothing.
func TestProgressCountsFromTheBuildCachesEnd(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	expected := map[string]time.Duration{buildCachePart: 60 * time.Second, "lab 01-a": 120 * time.Second, "lab 02-b": 300 * time.Second}
	p := newProgress(&out, expected, []string{buildCachePart, "lab 01-a", "lab 02-b"})
	p.start, p.now = now, func() time.Time { return now }
	p.begin(buildCachePart)
	now = now.Add(2 * time.Second)
	p.end(buildCachePart)
	if got, want := out.String(), "verify: the build cache done in 2s; 1 of 3 parts done, about 4m00s left\n"; got != want {
		t.Errorf("printed %q, want %q (the 4m00s after the build cache the measured run took)", got, want)
	}
	now = now.Add(time.Minute) // the measured run's pace after the cache
	p.end("lab 01-a")
	if got := p.summaryLocked(); got != "2 of 3 parts done, about 3m00s left" {
		t.Errorf("at the measured pace: %q, want 3m00s (4m00s less 1m00s after the cache)", got)
	}
}
