package gameday

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/internal/compose"
)

// LiveName is the name of the live game day's scenario.
const LiveName = "game-day"

// Breather is the pause between two stages of the live game day, with
// no incident and normal load: it is as long as the customers' patience,
// so that the last requests of a stage have ended before it is judged
// and the next begins.
const Breather = Patience

// Settle is how long the live game day plays normal load with no
// incident before its first stage: what an earlier playing left on the
// running system (calls still hung until their callers give up, a breaker
// open until its period ends and a trial succeeds, a spent retry budget)
// drains, so that a rerun starts as clean as the first run did.
const Settle = 2 * Patience

// Live plays the game day on a running system: its scenario (Scenario)
// plays every stage's phases one after another, on the example seed,
// through the scenario runner and the load generator, and Live judges
// each stage on its SLOs as soon as it is over, so that its Report, the
// score card so far, fills while the incidents play.
//
// The customers are the load generator's, not the tests' own: their
// answers reach Live through Observe (loadgen.Config.Observe, with the
// generator's Timeout set to Patience), so a live score is what happened
// on this machine, not what the tests will measure.
//
//	live := gameday.PrepareLive(&w.Cfg) // before system.Start
//	sys, _ := system.Start(w.Cfg)
//	live.Attach(sys, w)
//	gen, _ := loadgen.New(loadgen.Config{..., Timeout: gameday.Patience, Observe: live.Observe})
//	runner, _ := scenario.NewRunner(ctl, 1, append(scenario.Builtin(), live.Scenario())...)
type Live struct {
	auth   *authWatch
	stages []liveStage
	marks  []boundary // by scenario step: what, if anything, it begins or ends
	steps  []scenario.Step

	mu    sync.Mutex
	sys   *system.System
	w     *compose.Wiring
	began time.Time
	cur   int // the stage playing or last played; -1 before the first
	state string
}

// liveStage is one stage of a live game day and what it counted.
type liveStage struct {
	Stage
	phases   []Phase
	start    time.Time
	marks    []Mark
	charged  int // orders charged twice when it began
	requests []Request
	judged   *LiveStage
}

// boundary is what a scenario step begins: phase phase of stage stage
// (phase == len(phases) ends the stage), or nothing (stage -1).
type boundary struct{ stage, phase int }

// PrepareLive sets cfg up for a live game day: the game day's Capacity,
// and the auth watch that counts requests let in without auth. Call it
// before system.Start, then Attach the started system.
func PrepareLive(cfg *system.Config) *Live {
	for name, limit := range Capacity {
		cfg.Limits[name] = limit
	}
	cfg.TrackCallers = true
	l := &Live{auth: watchAuth(cfg), cur: -1}
	l.build()
	return l
}

// Attach gives l the started system and its wiring, whose counters the
// stages' marks read.
func (l *Live) Attach(sys *system.System, w *compose.Wiring) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sys, l.w = sys, w
}

// build lays out the scenario's steps: the Normal faults and Settle at
// normal load, then each stage's load and phases, a Breather after each.
func (l *Live) build() {
	add := func(at time.Duration, b boundary, st scenario.Step) {
		st.At = at
		l.steps = append(l.steps, st)
		l.marks = append(l.marks, b)
	}
	none := boundary{-1, 0}
	for _, spec := range Normal {
		add(0, none, scenario.Step{Fault: spec, Note: "the platform's normal latencies"})
	}
	add(0, none, scenario.Step{Load: &scenario.Load{Rate: NormalRate, Mix: loadMix(normalMix)},
		Note: fmt.Sprintf("settling for %v at normal load, no incident: what an earlier run left drains before stage 1", Settle)})
	at := Settle
	var on []string // the targets of the stage's faults still set
	// clear removes the rule on target; a cleared Normal rule comes back.
	clear := func(at time.Duration, target string) {
		add(at, none, scenario.Step{Clear: target})
		for _, n := range normalFor(target) {
			add(at, none, scenario.Step{Fault: n})
		}
		on = slices.DeleteFunc(on, func(t string) bool { return t == target })
	}
	for i, s := range Stages {
		ls := liveStage{Stage: s, phases: s.phases(ExampleSeed)}
		add(at, none, scenario.Step{Load: &scenario.Load{Rate: s.Rate, Mix: loadMix(s.Mix)},
			Note: fmt.Sprintf("stage %d of %d, %s: %s", i+1, len(Stages), s.Name, s.Incident)})
		for j, ph := range ls.phases {
			// As in Play: a phase's faults stay until a phase clears them.
			for _, target := range ph.Clear {
				clear(at, target)
			}
			for _, spec := range ph.Faults {
				add(at, none, scenario.Step{Fault: spec})
				on = append(on, target(spec))
			}
			add(at, boundary{i, j}, scenario.Step{Note: fmt.Sprintf("stage %s, phase %s", s.Name, ph.Name)})
			at += ph.For
		}
		for _, target := range slices.Clone(on) {
			clear(at, target)
		}
		add(at, boundary{i, len(ls.phases)}, scenario.Step{Load: &scenario.Load{Rate: NormalRate, Mix: loadMix(normalMix)},
			Note: fmt.Sprintf("stage %s is over: a breather of %v before it is judged", s.Name, Breather)})
		at += Breather
		l.stages = append(l.stages, ls)
	}
	add(at, none, scenario.Step{Note: "the game day ends"})
}

// loadMix is m as the load generator's mix (nil: the normal mix); order
// lookups are its ActionOrder.
func loadMix(m Mix) loadgen.Mix {
	if m == nil {
		m = normalMix
	}
	out := loadgen.Mix{}
	for action, share := range m {
		if action == ActionTrack {
			action = loadgen.ActionOrder
		}
		out[action] = share
	}
	return out
}

// Scenario is the live game day as a scenario for scenario.NewRunner,
// named LiveName, with l following it.
func (l *Live) Scenario() scenario.Scenario {
	length := Settle
	for _, s := range l.stages {
		length += s.Length(ExampleSeed) + Breather
	}
	return scenario.Scenario{
		Name: LiveName,
		Description: fmt.Sprintf("Lab 10's game day, live: %v to settle, then its %d stages one after another (%v in all with their breathers, on seed %d), "+
			"each judged on its SLOs when it is over; the dashboard shows the incident playing and the score card as it fills. "+
			"Needs -plan: the platform runs with the game day's capacity.", Settle, len(l.stages), length, ExampleSeed),
		Steps:  append([]scenario.Step(nil), l.steps...),
		Follow: l,
	}
}

// Began starts a new playing: what an earlier one counted is dropped.
func (l *Live) Began() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.began, l.cur, l.state = time.Now(), -1, scenario.StateRunning
	for i := range l.stages {
		s := &l.stages[i]
		s.start, s.marks, s.requests, s.judged = time.Time{}, nil, nil, nil
	}
	l.auth.mu.Lock()
	l.auth.start, l.auth.at = l.began, nil
	l.auth.mu.Unlock()
}

// Applied records the boundary step i begins or ends, and judges the
// stage before when the next one begins (its breather is over).
func (l *Live) Applied(i int) {
	if i < 0 || i >= len(l.marks) {
		return
	}
	b := l.marks[i]
	l.mu.Lock()
	defer l.mu.Unlock()
	if b.stage < 0 {
		if i == len(l.marks)-1 && l.cur >= 0 {
			l.judge(l.cur)
		}
		return
	}
	s := &l.stages[b.stage]
	now := time.Now()
	if b.phase == 0 {
		if l.cur >= 0 && l.cur != b.stage {
			l.judge(l.cur)
		}
		l.cur = b.stage
		s.start = now
		if l.sys != nil {
			s.charged = l.sys.Ledger.OrdersChargedMoreThanOnce()
		}
	}
	if l.sys != nil && l.w != nil {
		s.marks = append(s.marks, mark(l.sys, l.w, now.Sub(s.start)))
	}
}

// Ended records how the playing ended.
func (l *Live) Ended(state string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state = state
}

// judge judges stage i, once, if every one of its phases was played.
// l.mu is held.
func (l *Live) judge(i int) {
	s := &l.stages[i]
	if s.judged != nil || len(s.marks) != len(s.phases)+1 {
		return
	}
	r := Result{Stage: s.Name, Seed: ExampleSeed, Requests: s.requests, Phases: s.phases, Marks: s.marks}
	if l.sys != nil {
		r.ChargedTwice = l.sys.Ledger.OrdersChargedMoreThanOnce() - s.charged
	}
	from := s.start.Sub(l.began)
	for _, at := range l.auth.times() {
		if at >= from {
			r.LetIn = append(r.LetIn, at-from)
		}
	}
	js := &LiveStage{Name: s.Name, Requests: len(s.requests)}
	for _, v := range Judge(s.Stage, r) {
		js.SLOs = append(js.SLOs, LiveSLO{SLO: v.SLO.String(), Value: v.Format(), Met: v.Met})
		js.Of++
		if v.Met {
			js.Met++
		}
	}
	s.judged = js
}

// Observe records one of the load generator's answers (give it to
// loadgen.Config.Observe): it counts for the stage playing when it was
// sent, as the tests' customers would have seen it: an answer without
// errors is OK, one with a fallback's code and data is Degraded, and any
// other, or one that took Patience or more, Failed. Reviews are no core
// flow and are not counted.
func (l *Live) Observe(a loadgen.Answer) {
	action := a.Action
	switch action {
	case loadgen.ActionReview:
		return
	case loadgen.ActionOrder:
		action = ActionTrack
	}
	q := Request{Action: action, Took: a.Took, Code: a.Code}
	switch {
	case a.Took >= Patience:
		q.Outcome, q.Code, q.Took = Failed, "GAVE_UP", Patience
	case a.Code == "":
		q.Outcome = OK
	case a.Partial && fallbackCodes[a.Code]:
		q.Outcome = Degraded
	default:
		q.Outcome = Failed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur < 0 {
		return
	}
	s := &l.stages[l.cur]
	if s.judged != nil || s.start.IsZero() || a.Start.Before(s.start) {
		return
	}
	if len(s.marks) == len(s.phases)+1 && !a.Start.Before(s.start.Add(s.marks[len(s.marks)-1].At)) {
		return // sent in the breather
	}
	q.Start = a.Start.Sub(s.start)
	s.requests = append(s.requests, q)
}

// LiveReport is the live game day's score card so far, as Report returns
// it (in scenario.Status's report field, JSON as tagged).
type LiveReport struct {
	// State is the scenario's (scenario.StateRunning, ...).
	State string `json:"state"`
	// Seed is the seed the stages' phases were drawn with.
	Seed int64 `json:"seed"`
	// Stage and Incident are the stage playing ("" when none is);
	// Number counts it from 1, of Stages.
	Stage    string `json:"stage,omitempty"`
	Incident string `json:"incident,omitempty"`
	Number   int    `json:"number,omitempty"`
	Stages   int    `json:"stages"`
	// Judged are the stages judged so far, in order.
	Judged []LiveStage `json:"judged"`
	// Score is 100 x the mean over the judged stages of SLOs met / SLOs
	// (the score card's formula over the stages played so far); NaN is
	// never sent: with no stage judged it is 0.
	Score float64 `json:"score"`
}

// LiveStage is one judged stage on the live score card.
type LiveStage struct {
	Name     string    `json:"name"`
	Requests int       `json:"requests"` // the customers' requests it counted
	Met      int       `json:"met"`
	Of       int       `json:"of"`
	SLOs     []LiveSLO `json:"slos"`
}

// LiveSLO is one SLO of a judged stage: the SLO as the README writes it,
// the figure measured and whether it held.
type LiveSLO struct {
	SLO   string `json:"slo"`
	Value string `json:"value"`
	Met   bool   `json:"met"`
}

// Report returns the score card so far (a LiveReport).
func (l *Live) Report() any {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := LiveReport{State: l.state, Seed: ExampleSeed, Stages: len(l.stages), Judged: []LiveStage{}}
	if l.cur >= 0 && l.state == scenario.StateRunning {
		s := l.stages[l.cur]
		if s.judged == nil {
			r.Stage, r.Incident, r.Number = s.Name, s.Incident, l.cur+1
		}
	}
	var sum float64
	for _, s := range l.stages {
		if s.judged != nil {
			r.Judged = append(r.Judged, *s.judged)
			sum += float64(s.judged.Met) / float64(s.judged.Of)
		}
	}
	if n := len(r.Judged); n > 0 {
		r.Score = math.Round(1000*sum/float64(n)) / 10
	}
	return r
}
