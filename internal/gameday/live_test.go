package gameday

import (
	"context"
	"log/slog"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/plan"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/internal/compose"
	reference "github.com/gophereats/resilience/solutions/10-game-day"
)

// playLive plays the live game day on a system built from p, as
// cmd/fooddelivery -plan does, at scale (the runner's), in fake time, and
// returns the report at its end. With stopIn set, it first plays the game
// day until stopAfter (fake, scaled) into that stage, stops it there, and
// starts it again: the report is the rerun's.
func playLive(t *testing.T, p plan.Plan, scale float64, stopIn string, stopAfter time.Duration) LiveReport {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as the lab's rig: one P under the race detector
	var report LiveReport
	synctest.Test(t, func(t *testing.T) {
		w := compose.Wire(compose.FromPlan(p, false), compose.Settings{Seed: 1, Plan: p, Logger: slog.New(slog.DiscardHandler)})
		live := PrepareLive(&w.Cfg)
		sys, err := system.Start(w.Cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer sys.Close()
		live.Attach(sys, w)
		gen, err := loadgen.New(loadgen.Config{URL: sys.GatewayURL(), Client: sys.HTTPClient(), Seed: 1, Timeout: Patience, Observe: live.Observe})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- gen.Run(ctx) }()
		runner, err := scenario.NewRunner(&scenario.Controls{Faults: sys.Faults, Load: gen, Log: scenario.NewLog(0)}, scale,
			append(scenario.Builtin(), live.Scenario())...)
		if err != nil {
			t.Fatal(err)
		}
		if err := runner.Start(LiveName); err != nil {
			t.Fatal(err)
		}
		if stopIn != "" {
			for r := runner.Status().Report.(LiveReport); r.Stage != stopIn; r = runner.Status().Report.(LiveReport) {
				time.Sleep(time.Second)
			}
			time.Sleep(stopAfter)
			runner.Stop()
			if err := runner.Start(LiveName); err != nil {
				t.Fatal(err)
			}
			if r := runner.Status().Report.(LiveReport); len(r.Judged) != 0 || r.Stage != "" {
				t.Errorf("the rerun's report starts with %d stages judged, stage %q playing; want none", len(r.Judged), r.Stage)
			}
		}
		mid := false
		for runner.Status().State == scenario.StateRunning {
			time.Sleep(time.Second)
			if r := runner.Status().Report.(LiveReport); r.Stage == "outage" && !mid {
				mid = true
				if r.Number != 3 || len(r.Judged) != 2 || r.Incident == "" {
					t.Errorf("while the outage plays, the report says stage %d (%q, %q) with %d judged; want stage 3 with its incident and 2 judged", r.Number, r.Stage, r.Incident, len(r.Judged))
				}
			}
		}
		st := runner.Status()
		if st.State != scenario.StateFinished {
			t.Fatalf("the game day ended %s: %s", st.State, st.Error)
		}
		if !mid {
			t.Error("the report never showed the outage stage playing")
		}
		report = st.Report.(LiveReport)
		runner.Close()
		cancel()
		<-done
	})
	return report
}

// TestLiveGameDayJudgesEveryStageAsItEnds plays the live game day with the
// reference plan and with a plan that lets requests in while auth is down
// and retries charges without keys: every stage is judged, in order, on
// every SLO, from the load generator's own requests, and the two plans'
// figures differ where the tests' stages say they must.
func TestLiveGameDayJudgesEveryStageAsItEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the game day twice in fake time")
	}
	ref := playLive(t, reference.Plan(), 0.25, "", 0)
	var names []string
	for i, s := range ref.Judged {
		names = append(names, s.Name)
		if s.Of != len(Stages[i].SLOs) || len(s.SLOs) != s.Of || s.Requests == 0 {
			t.Errorf("stage %s: %d of %d SLOs judged over %d requests; want all %d, over some requests", s.Name, len(s.SLOs), s.Of, s.Requests, len(Stages[i].SLOs))
		}
	}
	var want []string
	for _, s := range Stages {
		want = append(want, s.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("judged stages %v, want %v", names, want)
	}
	if ref.State != scenario.StateFinished || ref.Stage != "" || ref.Score <= 0 || ref.Score > 100 {
		t.Errorf("at the end: state %s, stage %q, score %v; want finished, no stage playing, a score in (0, 100]", ref.State, ref.Stage, ref.Score)
	}
	t.Logf("the reference plan's live score at scale 0.25: %.1f", ref.Score)

	bad := reference.Plan()
	bad.Gateway.AuthFailOpen = true
	bad.IdempotencyKeys = false
	worse := playLive(t, bad, 0.25, "", 0)
	figure := func(r LiveReport, stage, slo string) (string, bool) {
		for _, s := range r.Judged {
			for _, o := range s.SLOs {
				if s.Name == stage && o.SLO == slo {
					return o.Value, o.Met
				}
			}
		}
		t.Fatalf("no SLO %q in stage %s", slo, stage)
		return "", false
	}
	for _, c := range []struct{ stage, slo string }{
		{"auth-down", "let in without auth <= 0 (down)"},
		{"lost-responses", "double charges <= 0"},
	} {
		refV, refMet := figure(ref, c.stage, c.slo)
		badV, badMet := figure(worse, c.stage, c.slo)
		if !refMet || badMet {
			t.Errorf("%s, %s: the reference measured %s (met %v), the plan that fails open without keys %s (met %v); want the reference to meet it and the other to miss it",
				c.stage, c.slo, refV, refMet, badV, badMet)
		}
	}
	if worse.Score >= ref.Score {
		t.Errorf("the plan that fails open without keys scores %.1f live, the reference %.1f; want it lower", worse.Score, ref.Score)
	}
}

// TestLiveGameDayRerunStartsClean stops the live game day in the
// outage's down phase (9 s at scale 0.25 is 36 s of the stage), with
// payment failing every charge and the breaker open, and
// starts it again on the same system: the rerun settles first, so its
// rush meets every SLO, as a first run's does.
func TestLiveGameDayRerunStartsClean(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the game day in fake time")
	}
	r := playLive(t, reference.Plan(), 0.25, "outage", 9*time.Second)
	if len(r.Judged) != len(Stages) {
		t.Fatalf("the rerun judged %d stages, want %d", len(r.Judged), len(Stages))
	}
	rush := r.Judged[0]
	if rush.Met != rush.Of {
		t.Errorf("the rerun's rush, on the system the stopped run left: %d of %d SLOs met (%+v); want all, as on a fresh system: Settle (%v) lets what the outage left drain",
			rush.Met, rush.Of, rush.SLOs, Settle)
	}
}
