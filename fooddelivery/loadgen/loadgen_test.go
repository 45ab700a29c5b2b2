package loadgen_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// start builds a system and a generator on it (inside a bubble) and
// returns the generator with a function that stops it and waits for Run.
func start(t *testing.T, cfg loadgen.Config, sysCfg system.Config, before ...func(*system.System)) (*system.System, *loadgen.Generator, func()) {
	t.Helper()
	sys, err := system.Start(sysCfg)
	require.NoError(t, err)
	t.Cleanup(func() { sys.Close() })
	// Faults go in before the first customer: set after Run starts, they
	// race with its first requests, which no fake clock orders.
	for _, f := range before {
		f(sys)
	}
	cfg.URL = sys.GatewayURL()
	cfg.Client = sys.HTTPClient()
	gen, err := loadgen.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gen.Run(ctx) }()
	stop := func() {
		cancel()
		require.NoError(t, <-done)
	}
	return sys, gen, stop
}

// customers counts, per action, the customers that came (sent, dropped or
// skipped).
func customers(s loadgen.Stats) map[string]int64 {
	out := map[string]int64{}
	for a, st := range s.Actions {
		if n := st.Sent + st.Dropped + st.Skipped; n > 0 {
			out[a] = n
		}
	}
	return out
}

func run(t *testing.T, seed int64, rate int, d time.Duration) loadgen.Stats {
	var stats loadgen.Stats
	synctest.Test(t, func(t *testing.T) {
		_, gen, stop := start(t, loadgen.Config{Seed: seed, Rate: rate}, system.Config{})
		// Stop between two customers, never at the instant one is due:
		// which of the two goes first at one fake instant is up to the
		// scheduler.
		time.Sleep(d + time.Second/time.Duration(2*rate))
		stop()
		stats = gen.Stats()
	})
	return stats
}

// At rate R for T virtual seconds the generator sends R*T+1 requests (at 0
// and at T too), in the mix Choose predicts, the same for the same seed; a healthy system
// answers them all; and Run leaves nothing behind when its context ends
// (synctest.Test fails the test if a goroutine of the bubble is left).
func TestRateTimesDurationRequestsInTheSeedsMix(t *testing.T) {
	const rate, seconds = 20, 10
	stats := run(t, 7, rate, seconds*time.Second)

	assert.Equal(t, int64(rate*seconds+1), stats.Customers, "20 requests per second for 10 s: at 0 s, 0.05 s, ... 10 s")
	assert.False(t, stats.Running)
	assert.Zero(t, stats.InFlight)
	assert.Zero(t, stats.Total.Failed, "a healthy system answers every request: %+v", stats.Total.Errors)
	assert.Zero(t, stats.Total.Dropped)
	assert.Equal(t, stats.Total.Sent, stats.Total.OK+stats.Total.Cancelled, "every request sent was answered, or cut short by the stop")
	assert.LessOrEqual(t, stats.Total.Cancelled, int64(1), "only a request sent at the very end is cut short")
	assert.Equal(t, stats.Total.OK, stats.Total.Latency.Count)

	want := map[string]int64{}
	for n := range stats.Customers {
		want[loadgen.Choose(7, n, loadgen.DefaultMix())]++
	}
	assert.Equal(t, want, customers(stats), "each customer's action is the seed's draw")
	for _, a := range loadgen.Actions() {
		assert.Positive(t, want[a], "in 201 customers of the default mix, some take action %s", a)
	}
	assert.Positive(t, stats.Actions[loadgen.ActionOrder].Sent, "lookups of placed orders are sent")

	again := run(t, 7, rate, seconds*time.Second)
	assert.Equal(t, customers(stats), customers(again), "the same seed gives the same customers")
	other := run(t, 8, rate, seconds*time.Second)
	assert.NotEqual(t, customers(stats), customers(other), "another seed gives other customers")
}

func TestRateChangesWhileRunningAndZeroPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, gen, stop := start(t, loadgen.Config{Seed: 1, Rate: 10}, system.Config{})
		defer stop()
		// Look between two requests, never at the instant one is due.
		time.Sleep(5*time.Second + 50*time.Millisecond)
		at5 := gen.Stats().Customers
		assert.Equal(t, int64(51), at5, "at 0 s, 0.1 s, ... 5 s")

		require.NoError(t, gen.SetRate(0))
		time.Sleep(10 * time.Second)
		assert.Equal(t, at5, gen.Stats().Customers, "rate 0 pauses the load")

		require.NoError(t, gen.SetRate(100))
		time.Sleep(2*time.Second - 5*time.Millisecond)
		assert.Equal(t, at5+200, gen.Stats().Customers, "100 per second for 2 s more")
		assert.Equal(t, 100, gen.Stats().Rate)

		assert.ErrorIs(t, gen.SetRate(loadgen.MaxRate+1), loadgen.ErrInvalid)
		assert.ErrorIs(t, gen.SetRate(-1), loadgen.ErrInvalid)
		assert.Equal(t, 100, gen.Rate(), "a refused rate changes nothing")
		assert.ErrorIs(t, gen.Run(context.Background()), loadgen.ErrRunning)
	})
}

// When requests pile up (payment hangs, so checkouts wait), no more than
// MaxInFlight are in flight; the rest are counted as dropped.
func TestInFlightIsBoundedAndDropsAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, gen, stop := start(t, loadgen.Config{
			// The timeout ends a checkout 10 ms after a customer is due,
			// not at the same fake instant: the order service has seen the
			// cancellation before the freed slot is taken again.
			Seed: 3, Rate: 50, MaxInFlight: 5, Timeout: 2*time.Second + 10*time.Millisecond,
			Mix: loadgen.Mix{loadgen.ActionCheckout: 1},
		}, system.Config{}, func(sys *system.System) {
			require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: time.Minute}))
		})
		peak := 0
		for range 400 {
			time.Sleep(10*time.Millisecond + time.Microsecond)
			peak = max(peak, gen.Stats().InFlight)
		}
		assert.Equal(t, 5, peak, "the generator fills its 5 slots and never takes a sixth")
		stop()

		s := gen.Stats()
		c := s.Actions[loadgen.ActionCheckout]
		assert.Equal(t, int64(201), s.Customers, "50 per second from 0 s to 4 s")
		assert.Positive(t, c.Dropped)
		assert.Equal(t, s.Customers, c.Sent+c.Dropped)
		assert.LessOrEqual(t, sys.Metrics.Route("order", "POST /orders").PeakInFlight.Load(), int64(5))
		assert.Equal(t, c.Sent, c.Failed+c.Cancelled, "every checkout timed out or was cut short")
		assert.Positive(t, c.Errors[gateway.CodeTimeout], "the generator's timeout shows as TIMEOUT: %v", c.Errors)
		assert.Zero(t, s.InFlight)
	})
}

// Errors are counted by the GraphQL error's extensions.code, and answers
// that kept some data count as partial.
func TestFailuresAreCountedByCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, gen, stop := start(t, loadgen.Config{
			Seed: 5, Rate: 20, Mix: loadgen.Mix{loadgen.ActionCheckout: 1, loadgen.ActionHome: 1},
		}, system.Config{}, func(sys *system.System) {
			require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Status: 503}))
			require.NoError(t, sys.Faults.Set("courier", "GET /eta/{restaurantId}", faults.Fault{Status: 500}))
		})
		time.Sleep(5 * time.Second)
		stop()

		s := gen.Stats()
		checkout, home := s.Actions[loadgen.ActionCheckout], s.Actions[loadgen.ActionHome]
		assert.Positive(t, checkout.Sent)
		assert.Equal(t, checkout.Sent, checkout.Failed+checkout.Cancelled)
		assert.Equal(t, checkout.Failed, checkout.Errors[gateway.CodeUnavailable], "payment's 503 reaches the customer as UNAVAILABLE: %v", checkout.Errors)
		assert.Positive(t, home.Sent)
		assert.Equal(t, home.Sent, home.Partial+home.Cancelled, "the home page still shows restaurants without their estimates")

		b, err := json.Marshal(s)
		require.NoError(t, err)
		var back loadgen.Stats
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, s, back, "Stats survives a JSON round trip")
		assert.Contains(t, string(b), `"errors":{"UNAVAILABLE":`)
	})
}

func TestNewRefusesNonsense(t *testing.T) {
	for name, cfg := range map[string]loadgen.Config{
		"no URL":              {},
		"a rate over the cap": {URL: "http://gateway/graphql", Rate: loadgen.MaxRate + 1},
		"a negative rate":     {URL: "http://gateway/graphql", Rate: -1},
		"an unknown action":   {URL: "http://gateway/graphql", Mix: loadgen.Mix{"dance": 1}},
		"an empty mix":        {URL: "http://gateway/graphql", Mix: loadgen.Mix{loadgen.ActionHome: 0}},
		"a negative weight":   {URL: "http://gateway/graphql", Mix: loadgen.Mix{loadgen.ActionHome: -1}},
		"no tokens":           {URL: "http://gateway/graphql", Tokens: []string{}},
	} {
		_, err := loadgen.New(cfg)
		assert.ErrorIs(t, err, loadgen.ErrInvalid, name)
	}
}
