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
// line each time a part finishes. A part is the build cache (filled first,
// alone), a lab, the running system's build or one of the project's
// checks. Since the rest runs side by side, a part is known by when it
// finished in a measured run (its expected finish, after verify's start);
// the estimate scales the last expected finish by how much slower or
// faster than that this run's finished parts were.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	status *term.Progress // nil off a terminal
	start  time.Time
	now    func() time.Time
	parts  map[string]*part
	order  []string
}

// A part of verify, when it was expected to finish and when it did.
type part struct {
	expected          time.Duration // after verify's start
	started, finished time.Time
}

// newProgress returns a progress writing to w for the parts named in
// order, each expected to finish at expected[name] after the start (a part
// not listed: at the latest of those).
func newProgress(w io.Writer, expected map[string]time.Duration, order []string) *progress {
	p := &progress{w: w, start: time.Now(), now: time.Now, parts: map[string]*part{}}
	var latest time.Duration
	for _, d := range expected {
		latest = max(latest, d)
	}
	for _, name := range order {
		e, ok := expected[name]
		if !ok {
			e = latest
		}
		p.parts[name] = &part{expected: e}
		p.order = append(p.order, name)
	}
	if term.IsTerminal(w) {
		p.status = term.New(w)
		p.status.Status(p.line)
	}
	return p
}

// skip forgets a part that will not run.
func (p *progress) skip(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.parts, name)
	if i := slices.Index(p.order, name); i >= 0 {
		p.order = slices.Delete(p.order, i, i+1)
	}
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
	if p.status == nil {
		fmt.Fprintln(p.w, line)
	}
	p.mu.Unlock()
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

// leftLocked estimates the time left: the latest expected finish, scaled
// by how long this run's finished parts took against their expected
// finishes, less the time spent. The build cache, filled before anything
// else starts, takes a minute on a cold cache and a second on a warm one:
// once it is done, every time is counted from its end, not from the start.
// The estimate is never below a second.
func (p *progress) leftLocked() time.Duration {
	base, offset := p.start, time.Duration(0)
	cache := p.parts[buildCachePart]
	if cache != nil && !cache.finished.IsZero() {
		base, offset = cache.finished, cache.expected
	} else {
		cache = nil // not done yet: it counts as any other part
	}
	var last, took, expected time.Duration
	for _, pt := range p.parts {
		if pt == cache {
			continue
		}
		last = max(last, pt.expected-offset)
		if !pt.finished.IsZero() {
			took += pt.finished.Sub(base)
			expected += pt.expected - offset
		}
	}
	scale := 1.0
	if expected > 0 {
		scale = float64(took) / float64(expected)
	}
	left := time.Duration(scale*float64(last)) - p.now().Sub(base)
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
	names := append([]string{buildCachePart}, labs...)
	names = append(names, learnerBuildPart)
	if project {
		names = append(names, projectParts...)
	}
	return names
}

// buildCachePart is the part that fills the build cache before the checks
// start (see warmBuildCache).
const buildCachePart = "the build cache"

// learnerBuildPart is the part that builds the running system with every
// starter's learner code (clause 10).
const learnerBuildPart = "the running system's build"

// partFinishes are when each part finished, after verify's start, in a run
// on a fresh clone on a 2-core machine (the estimate scales them to the
// machine it runs on).
var partFinishes = map[string]time.Duration{
	"the build cache":          69 * time.Second,
	"benchmarks":               82 * time.Second,
	"browser tests":            139 * time.Second,
	"go vet, gofmt and go.mod": 130 * time.Second,
	"go test (project)":        224 * time.Second,
	"lab 10-game-day":          201 * time.Second,
	"lab 01-timeouts":          208 * time.Second,
	"lab 02-deadlines":         224 * time.Second,
	"lab 03-retries":           238 * time.Second,
	"lab 04-retry-budgets":     251 * time.Second,
	"lab 05-breaker":           269 * time.Second,
	"lab 06-bulkhead":          280 * time.Second,
	"lab 07-fallback":          299 * time.Second,
	"lab 08-idempotency":       318 * time.Second,
	"lab 09-hedging":           333 * time.Second,
	learnerBuildPart:           334 * time.Second,
}
