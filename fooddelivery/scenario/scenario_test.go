package scenario_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// rig is a running system with a load generator (rate 0 unless a test
// sets it), a change log, Controls and a Runner, all stopped when the test
// ends. Build it inside a bubble.
type rig struct {
	sys *system.System
	gen *loadgen.Generator
	log *scenario.Log
	ctl *scenario.Controls
	run *scenario.Runner
}

func newRig(t *testing.T, scale float64, scenarios ...scenario.Scenario) *rig {
	t.Helper()
	sys, err := system.Start(system.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sys.Close() })
	gen, err := loadgen.New(loadgen.Config{URL: sys.GatewayURL(), Client: sys.HTTPClient(), Seed: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- gen.Run(ctx) }()
	log := scenario.NewLog(0)
	ctl := &scenario.Controls{Faults: sys.Faults, Load: gen, GameDay: &fooddelivery.GameDay{}, Log: log}
	run, err := scenario.NewRunner(ctl, scale, scenarios...)
	require.NoError(t, err)
	t.Cleanup(func() {
		run.Close()
		cancel()
		<-done
	})
	return &rig{sys: sys, gen: gen, log: log, ctl: ctl, run: run}
}

func specs(inj *faults.Injector) []string {
	out := []string{}
	for _, r := range inj.List() {
		out = append(out, r.String())
	}
	return out
}

// payment-down sets its faults and clears them on schedule, raises the
// load while it runs and puts it back at the end, and the change log
// records each change at the virtual time it happened.
func TestPaymentDownAppliesAndClearsItsFaultsOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1)
		t0 := time.Now()
		require.NoError(t, rg.run.Start("payment-down"))
		assert.ErrorIs(t, rg.run.Start("flaky-courier"), scenario.ErrBusy)

		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }
		at(time.Second)
		assert.Empty(t, specs(rg.sys.Faults), "nothing is broken in the first 5 s")
		assert.Equal(t, 20, rg.gen.Rate(), "the scenario brings customers")
		st := rg.run.Status()
		assert.Equal(t, scenario.StateRunning, st.State)
		assert.Equal(t, 1, st.StepsDone)
		assert.Equal(t, "payment fails every charge (set fault payment:POST /charges=error,status=503)", st.Next)
		assert.InDelta(t, 4, st.NextInSeconds, 1e-9)

		at(6 * time.Second)
		assert.Equal(t, []string{"payment:POST /charges=error,status=503"}, specs(rg.sys.Faults))
		checkouts := rg.gen.Stats().Actions[loadgen.ActionCheckout]
		assert.Positive(t, checkouts.Errors["UNAVAILABLE"], "checkouts fail while payment is down: %+v", checkouts)

		at(36 * time.Second)
		assert.Equal(t, []string{"payment=reset"}, specs(rg.sys.Faults))
		at(66 * time.Second)
		assert.Empty(t, specs(rg.sys.Faults), "payment recovers at 65 s")
		assert.Equal(t, scenario.StateRunning, rg.run.Status().State, "the scenario watches the recovery until 90 s")

		at(91 * time.Second)
		st = rg.run.Status()
		assert.Equal(t, scenario.StateFinished, st.State)
		assert.Equal(t, 5, st.StepsDone)
		assert.Equal(t, 90.0, st.ElapsedSeconds)
		assert.Zero(t, rg.gen.Rate(), "the load is put back as it was")

		var got []string
		for _, c := range rg.log.Changes(0) {
			got = append(got, fmt.Sprintf("%v %s %s: %s", c.Time.Sub(t0), c.Kind, c.By, c.Description))
		}
		assert.Equal(t, []string{
			"0s scenario-started scenario payment-down: scenario payment-down started (1m30s at scale 1)",
			"0s load scenario payment-down: load rate 0 -> 20 requests per second",
			"5s fault-set scenario payment-down: fault set: payment:POST /charges=error,status=503",
			"35s fault-removed scenario payment-down: fault removed: payment:POST /charges=error,status=503",
			"35s fault-set scenario payment-down: fault set: payment=reset",
			"1m5s fault-removed scenario payment-down: fault removed: payment=reset",
			"1m30s load scenario payment-down: load rate 20 -> 0 requests per second",
			"1m30s scenario-finished scenario payment-down: scenario payment-down finished; what it changed is put back",
		}, got)
	})
}

// Durations scale: at 0.1 the same timeline plays ten times faster.
func TestScaleShortensTheTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 0.1)
		t0 := time.Now()
		require.NoError(t, rg.run.Start("flaky-courier"))
		assert.Equal(t, 15.0, rg.run.Status().DurationSeconds)
		time.Sleep(time.Second)
		assert.Equal(t, []string{"courier=error,status=503,p=0.5"}, specs(rg.sys.Faults), "set at 0.5 s")
		time.Sleep(12 * time.Second)
		assert.Empty(t, specs(rg.sys.Faults), "cleared at 12.5 s")
		time.Sleep(3 * time.Second)
		assert.Equal(t, scenario.StateFinished, rg.run.Status().State)
		last := rg.log.Changes(0)
		assert.Equal(t, 15*time.Second, last[len(last)-1].Time.Sub(t0))
	})
}

// Stopping a scenario puts back what it changed: a rule someone had set
// on the same target before comes back, its own rules go, and the load
// returns to its rate and mix; what someone else changed meanwhile stays.
func TestStopPutsBackWhatTheScenarioChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1)
		_, err := rg.ctl.AddFault("admin", "menu-2=latency,fixed=1s")
		require.NoError(t, err)
		_, err = rg.ctl.AddFault("admin", "order:GET /orders/{id}=error,status=500")
		require.NoError(t, err)
		require.NoError(t, rg.ctl.SetRate("admin", 5))

		require.NoError(t, rg.run.Start("slow-menu-replica"))
		time.Sleep(10 * time.Second)
		assert.Equal(t, []string{
			"menu-2=tail,p=0.05,latency=5s,fixed=300ms,jitter=200ms",
			"order:GET /orders/{id}=error,status=500",
		}, specs(rg.sys.Faults))
		assert.Equal(t, 20, rg.gen.Rate())
		_, err = rg.ctl.AddFault("admin", "courier=reset")
		require.NoError(t, err)

		assert.True(t, rg.run.Stop())
		assert.False(t, rg.run.Stop(), "nothing is running any more")
		assert.Equal(t, scenario.StateStopped, rg.run.Status().State)
		assert.Equal(t, []string{"courier=reset", "menu-2=latency,fixed=1s", "order:GET /orders/{id}=error,status=500"},
			specs(rg.sys.Faults), "menu-2's earlier rule is back; the admin's rules stay")
		assert.Equal(t, 5, rg.gen.Rate())
		changes := rg.log.Changes(0)
		assert.Equal(t, scenario.KindScenarioStopped, changes[len(changes)-1].Kind)
	})
}

// checkout-rush sends more checkouts than the order service's concurrency
// limit can hold, so the order service rejects some.
func TestCheckoutRushOverflowsTheOrderService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 0.1)
		require.NoError(t, rg.run.Start("checkout-rush"))
		time.Sleep(7 * time.Second)
		assert.Equal(t, scenario.StateFinished, rg.run.Status().State)
		orders := rg.sys.Metrics.Route("order", "POST /orders")
		assert.Equal(t, int64(system.DefaultLimits["order"]), orders.PeakInFlight.Load(), "the order service was full")
		assert.Positive(t, orders.Rejected.Load(), "and turned checkouts away")
		assert.Positive(t, rg.gen.Stats().Actions[loadgen.ActionCheckout].Errors["OVERLOADED"])
		assert.Zero(t, rg.gen.Rate())
		assert.Equal(t, loadgen.DefaultMix(), rg.gen.Mix())
		assert.Empty(t, specs(rg.sys.Faults))
	})
}

func TestStartRefusesWhatCannotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1,
			scenario.Scenario{Name: "typo", Steps: []scenario.Step{{At: time.Second, Fault: "payment:POST /charge=hang"}}},
			scenario.Scenario{Name: "backwards", Steps: []scenario.Step{{At: 2 * time.Second}, {At: time.Second}}},
		)
		err := rg.run.Start("nope")
		require.ErrorIs(t, err, scenario.ErrUnknownScenario)
		assert.Contains(t, err.Error(), "typo, backwards")

		err = rg.run.Start("typo")
		require.ErrorIs(t, err, scenario.ErrInvalid)
		require.ErrorIs(t, err, faults.ErrUnknownTarget)
		assert.Contains(t, err.Error(), `"POST /charges"`, "the message lists the real routes")
		require.ErrorIs(t, rg.run.Start("backwards"), scenario.ErrInvalid)
		assert.Equal(t, scenario.StateIdle, rg.run.Status().State)
		assert.Empty(t, rg.log.Changes(0), "nothing changed")

		_, err = scenario.NewRunner(rg.ctl, 0)
		assert.ErrorIs(t, err, scenario.ErrInvalid)
	})
}

// Every built-in scenario can run on the default system.
func TestBuiltinScenariosFitTheSystem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 0.01)
		// A process of -processes can crash; here a crash only drops the
		// answer, so that payment-crash plays to its end too.
		rg.sys.Faults.SetCrash(func() {})
		for _, s := range rg.run.Scenarios() {
			assert.NotEmpty(t, s.Description)
			require.NoError(t, rg.run.Start(s.Name), s.Name)
			time.Sleep(s.Duration()/100 + time.Second)
			st := rg.run.Status()
			assert.Equal(t, scenario.StateFinished, st.State, "%s: %s", s.Name, st.Error)
			assert.Empty(t, specs(rg.sys.Faults), "%s leaves no fault behind", s.Name)
		}
		assert.Len(t, rg.run.Scenarios(), 6)
	})
}

func TestControlsRecordEveryChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1)
		t0 := time.Now()
		_, err := rg.ctl.AddFault("admin", "payment=hang,max=5s")
		require.NoError(t, err)
		time.Sleep(time.Second)
		_, err = rg.ctl.AddFault("admin", "payment=hang,max=2s")
		require.NoError(t, err)
		time.Sleep(time.Second)
		_, err = rg.ctl.RemoveFault("admin", "payment", "")
		require.NoError(t, err)
		_, err = rg.ctl.RemoveFault("admin", "payment", "")
		require.ErrorIs(t, err, scenario.ErrNoRule)
		require.NoError(t, rg.ctl.SetRate("admin", 3))
		require.NoError(t, rg.ctl.SetMix("admin", loadgen.Mix{loadgen.ActionHome: 1}))
		require.NoError(t, rg.ctl.SetGameDay("admin", map[string]bool{fooddelivery.FeatureMenu: true, fooddelivery.FeatureETA: false}))
		err = rg.ctl.SetGameDay("admin", map[string]bool{"menus": true})
		require.ErrorIs(t, err, scenario.ErrUnknownFeature)
		assert.Contains(t, err.Error(), "menu, eta, recommendations")
		state, err := rg.ctl.GameDayState()
		require.NoError(t, err)
		assert.True(t, state[fooddelivery.FeatureMenu])
		assert.False(t, state[fooddelivery.FeatureETA])
		assert.Len(t, state, len(fooddelivery.AllFeatures()))

		changes := rg.log.Changes(0)
		var got []string
		for _, c := range changes {
			got = append(got, fmt.Sprintf("%d %v %s %s: %s", c.Seq, c.Time.Sub(t0), c.Kind, c.By, c.Description))
		}
		assert.Equal(t, []string{
			"1 0s fault-set admin: fault set: payment=hang,max=5s",
			"2 1s fault-set admin: fault replaced: payment=hang,max=5s -> payment=hang,max=2s",
			"3 2s fault-removed admin: fault removed: payment=hang,max=2s",
			"4 2s load admin: load rate 0 -> 3 requests per second",
			"5 2s load admin: load mix restaurants 15, menu 30, home 25, checkout 15, review 5, order 10 -> home 1",
			"6 2s gameday admin: game day: menu forced onto the fallback",
		}, got)
		assert.Len(t, rg.log.Changes(4), 2)

		b, err := json.Marshal(changes[0])
		require.NoError(t, err)
		assert.Contains(t, string(b), `"kind":"fault-set","by":"admin","description":"fault set: payment=hang,max=5s"`)

		none := &scenario.Controls{Faults: rg.sys.Faults}
		assert.ErrorIs(t, none.SetRate("admin", 1), scenario.ErrNotWired)
		_, err = none.GameDayState()
		assert.ErrorIs(t, err, scenario.ErrNotWired)
	})
}

func TestLogKeepsTheLastN(t *testing.T) {
	log := scenario.NewLog(3)
	for i := range 5 {
		log.Add(scenario.KindLoad, "test", fmt.Sprint(i))
	}
	changes := log.Changes(0)
	require.Len(t, changes, 3)
	assert.Equal(t, []int64{3, 4, 5}, []int64{changes[0].Seq, changes[1].Seq, changes[2].Seq})
	assert.Equal(t, "4", changes[2].Description)
	assert.Empty(t, (*scenario.Log)(nil).Changes(0))
}
