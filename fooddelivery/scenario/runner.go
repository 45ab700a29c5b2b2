package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
)

// States of a Runner, as Status reports them.
const (
	StateIdle     = "idle"     // no scenario has run yet
	StateRunning  = "running"  // a scenario is playing its timeline
	StateFinished = "finished" // the last scenario ran to its end
	StateStopped  = "stopped"  // the last scenario was stopped early
	StateFailed   = "failed"   // a step of the last scenario could not be applied
)

// Status is what a Runner is doing. Durations are in seconds of the clock
// of package time, after scaling. It encodes to JSON as is.
type Status struct {
	// State is one of the State constants.
	State string `json:"state"`
	// Name is the scenario running, or the last one that ran ("" when
	// idle).
	Name string `json:"name,omitempty"`
	// Scale is the factor the Runner multiplies every step's offset by.
	Scale float64 `json:"scale"`
	// Started is when the scenario started; Ended when it finished, was
	// stopped or failed (zero while running).
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// ElapsedSeconds is the time since Started (up to Ended);
	// DurationSeconds the scaled length of the whole timeline.
	ElapsedSeconds  float64 `json:"elapsedSeconds"`
	DurationSeconds float64 `json:"durationSeconds"`
	// StepsDone of Steps have been applied.
	StepsDone int `json:"stepsDone"`
	Steps     int `json:"steps"`
	// Next describes the next step, and NextInSeconds how soon it comes;
	// empty when none is left.
	Next          string  `json:"next,omitempty"`
	NextInSeconds float64 `json:"nextInSeconds,omitempty"`
	// Error says why the scenario failed (State "failed").
	Error string `json:"error,omitempty"`
	// Report is what the scenario's Follower reports (Scenario.Follow),
	// while it runs and after it ended; omitted for a scenario without
	// one.
	Report any `json:"report,omitempty"`
}

// Runner plays scenarios, one at a time, through a Controls. Create one
// with NewRunner and Close it when done; its methods are safe for
// concurrent use.
type Runner struct {
	controls  *Controls
	scale     float64
	scenarios []Scenario

	mu     sync.Mutex
	status Status
	run    *run     // the scenario running, or nil
	follow Follower // the Follower of the scenario last started, or nil
}

// run is one playing of a scenario.
type run struct {
	sc       Scenario
	by       string
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	// What the scenario changed, to put back when it ends.
	faults map[ruleKey]*touched
	rate   *int        // the rate before the scenario's first load step
	mix    loadgen.Mix // the mix before the scenario's first mix step
	setTo  struct {    // what the scenario last set
		rate int
		mix  loadgen.Mix
	}
}

type ruleKey struct{ service, route string }

// touched is a fault target a scenario changed: the rule before the
// scenario and the rule the scenario last left (nil for none).
type touched struct {
	before, left *faults.Rule
}

// NewRunner returns a Runner that plays scenarios through c, with every
// step's offset multiplied by scale (0.1 plays a 90 s scenario in 9 s;
// the faults' own durations, such as a 5 s latency, are not scaled). The
// scenarios it knows are the ones given, or Builtin when none is. It
// returns an error wrapping ErrInvalid for a scale that is not a positive
// number, for two scenarios with the same name, or for a nil c or
// c.Faults.
func NewRunner(c *Controls, scale float64, scenarios ...Scenario) (*Runner, error) {
	if c == nil || c.Faults == nil {
		return nil, fmt.Errorf("%w: the runner needs Controls with a fault injector", ErrInvalid)
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("%w: scale %v must be a positive number (1 plays scenarios in real time)", ErrInvalid, scale)
	}
	if len(scenarios) == 0 {
		scenarios = Builtin()
	}
	seen := map[string]bool{}
	for _, s := range scenarios {
		if seen[s.Name] {
			return nil, fmt.Errorf("%w: two scenarios are named %q", ErrInvalid, s.Name)
		}
		seen[s.Name] = true
	}
	return &Runner{controls: c, scale: scale, scenarios: scenarios, status: Status{State: StateIdle, Scale: scale}}, nil
}

// Scenarios returns the scenarios the Runner knows, in order.
func (r *Runner) Scenarios() []Scenario { return append([]Scenario(nil), r.scenarios...) }

// Scale returns the factor given to NewRunner.
func (r *Runner) Scale() float64 { return r.scale }

func (r *Runner) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * r.scale)
}

// Start starts the scenario named name and returns at once; its steps are
// applied on a goroutine of the Runner. It returns an error wrapping
// ErrUnknownScenario for a name it does not know (the message lists the
// names), ErrBusy while another scenario runs, or ErrInvalid when a step
// cannot apply to this system; then nothing has changed.
func (r *Runner) Start(name string) error {
	var sc *Scenario
	for i := range r.scenarios {
		if r.scenarios[i].Name == name {
			sc = &r.scenarios[i]
		}
	}
	if sc == nil {
		names := make([]string, len(r.scenarios))
		for i, s := range r.scenarios {
			names[i] = s.Name
		}
		return fmt.Errorf("%w named %q; the scenarios are %s", ErrUnknownScenario, name, strings.Join(names, ", "))
	}
	if err := sc.check(r.controls); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run != nil {
		return fmt.Errorf("%w: %s is running; stop it first", ErrBusy, r.run.sc.Name)
	}
	rn := &run{sc: *sc, by: "scenario " + sc.Name, stop: make(chan struct{}), done: make(chan struct{}), faults: map[ruleKey]*touched{}}
	r.run = rn
	r.follow = sc.Follow
	r.status = Status{
		State: StateRunning, Name: sc.Name, Scale: r.scale, Started: time.Now(),
		DurationSeconds: r.scaled(sc.Duration()).Seconds(), Steps: len(sc.Steps),
	}
	r.controls.Log.Add(KindScenarioStarted, rn.by, fmt.Sprintf("scenario %s started (%v at scale %g)", sc.Name, r.scaled(sc.Duration()), r.scale))
	if sc.Follow != nil {
		sc.Follow.Began()
	}
	go r.play(rn)
	return nil
}

// play applies rn's steps on schedule, then puts back what it changed.
func (r *Runner) play(rn *run) {
	defer close(rn.done)
	start := r.Status().Started
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i, st := range rn.sc.Steps {
		if wait := time.Until(start.Add(r.scaled(st.At))); wait > 0 {
			timer.Reset(wait)
			select {
			case <-rn.stop:
				r.end(rn, StateStopped, nil)
				return
			case <-timer.C:
			}
		} else {
			select {
			case <-rn.stop:
				r.end(rn, StateStopped, nil)
				return
			default:
			}
		}
		if err := r.apply(rn, st); err != nil {
			r.end(rn, StateFailed, fmt.Errorf("step %d (%s): %w", i+1, st, err))
			return
		}
		r.mu.Lock()
		r.status.StepsDone = i + 1
		r.mu.Unlock()
		if rn.sc.Follow != nil {
			rn.sc.Follow.Applied(i)
		}
	}
	r.end(rn, StateFinished, nil)
}

// apply applies one step through the Controls, remembering what it
// changed.
func (r *Runner) apply(rn *run, st Step) error {
	c := r.controls
	if st.Clear != "" {
		service, route := parseTarget(st.Clear)
		rn.touch(c, service, route)
		if _, err := c.RemoveFault(rn.by, service, route); err != nil && !errors.Is(err, ErrNoRule) {
			return err
		}
		rn.faults[ruleKey{service, route}].left = nil
	}
	if st.Fault != "" {
		rule, err := faults.Parse(st.Fault)
		if err != nil {
			return err
		}
		rn.touch(c, rule.Service, rule.Route)
		if err := c.SetFault(rn.by, rule); err != nil {
			return err
		}
		rn.faults[ruleKey{rule.Service, rule.Route}].left = &rule
	}
	if l := st.Load; l != nil && !l.optional(c) {
		if rn.rate == nil {
			rate := c.Load.Rate()
			rn.rate, rn.setTo.rate = &rate, rate
		}
		rate := l.Rate
		if l.AtLeast {
			rate = max(rate, c.Load.Rate())
		}
		if rate != c.Load.Rate() {
			if err := c.SetRate(rn.by, rate); err != nil {
				return err
			}
		}
		rn.setTo.rate = rate
		if l.Mix != nil {
			if rn.mix == nil {
				rn.mix = c.Load.Mix()
			}
			if err := c.SetMix(rn.by, l.Mix); err != nil {
				return err
			}
			rn.setTo.mix = maps.Clone(l.Mix)
		}
	}
	return nil
}

// touch records the rule at service and route before the scenario first
// changes it.
func (rn *run) touch(c *Controls, service, route string) {
	k := ruleKey{service, route}
	if _, ok := rn.faults[k]; ok {
		return
	}
	t := &touched{}
	if before, ok := c.rule(service, route); ok {
		t.before = &before
		t.left = &before
	}
	rn.faults[k] = t
}

// end puts back what rn changed, where nobody changed it since, records
// how the scenario ended and frees the Runner for the next one.
func (r *Runner) end(rn *run, state string, err error) {
	c := r.controls
	for k, t := range rn.faults {
		now, ok := c.rule(k.service, k.route)
		if !sameRule(now, ok, t.left) || sameRule(now, ok, t.before) {
			continue // someone else changed it since, or it is as it was
		}
		if t.before != nil {
			c.SetFault(rn.by, *t.before)
		} else {
			c.RemoveFault(rn.by, k.service, k.route)
		}
	}
	if rn.rate != nil && c.Load.Rate() == rn.setTo.rate && rn.setTo.rate != *rn.rate {
		c.SetRate(rn.by, *rn.rate)
	}
	if rn.mix != nil && maps.Equal(c.Load.Mix(), rn.setTo.mix) {
		c.SetMix(rn.by, rn.mix)
	}

	if rn.sc.Follow != nil {
		rn.sc.Follow.Ended(state)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.State = state
	r.status.Ended = time.Now()
	switch state {
	case StateFinished:
		c.Log.Add(KindScenarioFinished, rn.by, "scenario "+rn.sc.Name+" finished; what it changed is put back")
	case StateStopped:
		c.Log.Add(KindScenarioStopped, rn.by, "scenario "+rn.sc.Name+" stopped; what it changed is put back")
	case StateFailed:
		r.status.Error = err.Error()
		c.Log.Add(KindScenarioFailed, rn.by, "scenario "+rn.sc.Name+" failed at "+err.Error()+"; what it changed is put back")
	}
	r.run = nil
	if rn.sc.Check && c.Check != nil && state != StateFailed {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
			defer cancel()
			line, err := c.Check(ctx)
			if err != nil {
				line = "the checker could not read the system, so it judged nothing: " + err.Error()
			}
			c.Log.Add(KindCheck, rn.by, "after scenario "+rn.sc.Name+": "+line)
		}()
	}
}

// checkTimeout bounds the checker's run after a scenario.
const checkTimeout = 30 * time.Second

func sameRule(now faults.Rule, ok bool, want *faults.Rule) bool {
	if !ok || want == nil {
		return !ok && want == nil
	}
	return now == *want
}

// Stop stops the running scenario and waits until what it changed is put
// back: each fault rule it set or cleared returns to what it was before
// the scenario, and the load generator's rate and mix too, except where
// someone else changed them since. It reports whether a scenario was
// running.
func (r *Runner) Stop() bool {
	r.mu.Lock()
	rn := r.run
	r.mu.Unlock()
	if rn == nil {
		return false
	}
	rn.stopOnce.Do(func() { close(rn.stop) })
	<-rn.done
	return true
}

// Close stops the running scenario, if any (see Stop). Call it before the
// system shuts down, so that no goroutine of the Runner is left.
func (r *Runner) Close() { r.Stop() }

// Status reports what the Runner is doing.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	if s.State == StateIdle {
		return s
	}
	if r.follow != nil {
		s.Report = r.follow.Report()
	}
	end := s.Ended
	if s.State == StateRunning {
		end = time.Now()
		if r.run != nil && s.StepsDone < len(r.run.sc.Steps) {
			next := r.run.sc.Steps[s.StepsDone]
			s.Next = next.String()
			s.NextInSeconds = max(0, time.Until(s.Started.Add(r.scaled(next.At))).Seconds())
		}
	}
	s.ElapsedSeconds = end.Sub(s.Started).Seconds()
	return s
}
