package contract

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/term"
)

// progress tells, on stderr, which parts of verify are running and about
// how long is left, while the report goes to stdout unchanged: on a
// terminal a status line redrawn every second, elsewhere (CI, a pipe) one
// line each time a part finishes. A part is a lab, the running system's
// build or one of the project's checks; its weight is how long it took on
// a 2-core machine, and the estimate scales the weights left by how fast
// this run has gone so far.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	status  *term.Progress // nil off a terminal
	start   time.Time
	now     func() time.Time
	parts   map[string]*part
	order   []string
	workers int
}

// A part of verify and what it is known to take.
type part struct {
	weight            time.Duration
	started, finished time.Time
}

// newProgress returns a progress writing to w for the parts named, each
// with its expected duration; workers is how many run at once.
func newProgress(w io.Writer, workers int, weights map[string]time.Duration, order []string) *progress {
	p := &progress{w: w, start: time.Now(), now: time.Now, parts: map[string]*part{}, workers: max(workers, 1)}
	for _, name := range order {
		w, ok := weights[name]
		if !ok {
			w = time.Minute
		}
		p.parts[name] = &part{weight: w}
		p.order = append(p.order, name)
	}
	if term.IsTerminal(w) {
		p.status = term.New(w)
		p.status.Status(p.line)
	}
	return p
}

// begin marks a part started.
func (p *progress) begin(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pt := p.parts[name]; pt != nil && pt.started.IsZero() {
		pt.started = p.now()
	}
}

// end marks a part finished and, off a terminal, prints a line saying so.
func (p *progress) end(name string) {
	p.mu.Lock()
	pt := p.parts[name]
	if pt == nil || !pt.finished.IsZero() {
		p.mu.Unlock()
		return
	}
	pt.finished = p.now()
	if pt.started.IsZero() {
		pt.started = pt.finished
	}
	line := fmt.Sprintf("verify: %s done in %s; %s", name, round(pt.finished.Sub(pt.started)), p.summaryLocked())
	p.mu.Unlock()
	if p.status == nil {
		fmt.Fprintln(p.w, line)
	}
}

// stop removes the status line.
func (p *progress) stop() {
	if p.status != nil {
		p.status.Stop()
	}
}

// line is the status line's text.
func (p *progress) line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var running []string
	for _, name := range p.order {
		if pt := p.parts[name]; !pt.started.IsZero() && pt.finished.IsZero() {
			running = append(running, name)
		}
	}
	return fmt.Sprintf("verify: %s; running %s", p.summaryLocked(), strings.Join(running, ", "))
}

// summaryLocked says how many parts are done and the estimate of what is
// left: "4 of 13 parts done, about 3m10s left".
func (p *progress) summaryLocked() string {
	done := 0
	for _, pt := range p.parts {
		if !pt.finished.IsZero() {
			done++
		}
	}
	if done == len(p.parts) {
		return fmt.Sprintf("%d of %d parts done", done, len(p.parts))
	}
	return fmt.Sprintf("%d of %d parts done, about %s left", done, len(p.parts), round(p.leftLocked()))
}

// leftLocked estimates the time left: until a tenth of the weight is done,
// the weight left shared by the workers; then the time spent so far scaled
// by the weight left per weight done, which follows this machine's speed.
// A running part counts as done for the time it has run, up to nine
// tenths of its weight. It is never below a second.
func (p *progress) leftLocked() time.Duration {
	now := p.now()
	var total, done time.Duration
	for _, pt := range p.parts {
		total += pt.weight
		switch {
		case !pt.finished.IsZero():
			done += pt.weight
		case !pt.started.IsZero():
			done += min(now.Sub(pt.started), pt.weight*9/10)
		}
	}
	elapsed := now.Sub(p.start)
	var left time.Duration
	if total > 0 && done >= total/10 {
		left = time.Duration(float64(elapsed) * float64(total-done) / float64(done))
	} else {
		left = (total - done) / time.Duration(p.workers)
	}
	return max(left, time.Second)
}

// round shortens d for people: 1m05s, 45s.
func round(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// partNames lists verify's parts in the order they are reported.
func partNames(labs []string, project bool) []string {
	names := slices.Clone(labs)
	names = append(names, learnerBuildPart)
	if project {
		names = append(names, projectParts...)
	}
	return names
}

// learnerBuildPart is the part that builds the running system with every
// starter's learner code (clause 10).
const learnerBuildPart = "the running system's build"

// partWeights are the parts' durations measured on a 2-core machine
// (verify on a fresh clone, everything side by side); a part not listed
// counts as a minute.
var partWeights = map[string]time.Duration{}
