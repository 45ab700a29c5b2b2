package gameday

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// The loads of the game day, in customers' requests per second.
const (
	NormalRate = 15
	RushRate   = 45
)

// Stages are the game day's incidents, in the order lab 10's README gives
// them, each with its SLOs. Their seeds are not the README's examples'
// (ExampleSeed).
var Stages = []Stage{
	{
		Step: 1, Name: "rush", Incident: "a rush at three times the normal load, then payment slow but working for 10 s",
		Rate: RushRate, Seeds: []int64{11, 12, 13},
		Draw: rush,
		SLOs: []SLO{
			{Measure: BrowseAvailability, Limit: 0.999},
			{Measure: CheckoutAvailability, Phase: "rush", Limit: 0.99},
			{Measure: FallbackShare, Limit: 0.01},
			{Measure: CheckoutP99, Phase: "rush", Limit: 1.5},
			{Measure: CheckoutAvailability, Phase: "slow", Limit: 0.98},
			{Measure: RetriesPerCharge, Phase: "rush", Limit: 0},
		},
	},
	{
		Step: 2, Name: "hang", Incident: "payment hangs on 8% of charges, then on every charge for 10 s, during a rush of checkouts",
		Rate: RushRate, Seeds: []int64{21, 22, 23}, Mix: checkoutRush, Mobile: 0.3,
		Phases: []Phase{
			{Name: "partial", For: 8 * time.Second, Faults: []string{"payment:POST /charges=hang,max=60s,p=0.08,fixed=60ms,jitter=80ms"}},
			{Name: "before", For: 2 * time.Second, Clear: []string{"payment:POST /charges"}},
			{Name: "hang", For: 10 * time.Second, Faults: []string{"payment:POST /charges=hang,max=60s"}},
			{Name: "after", For: 6 * time.Second, Clear: []string{"payment:POST /charges"}},
		},
		SLOs: []SLO{
			{Measure: CheckoutAvailability, Phase: "partial", Limit: 0.9},
			{Measure: CheckoutP99, Phase: "partial", Limit: 1.5},
			{Measure: LateWork, Limit: 0},
			{Measure: BrowseAvailability, Phase: "hang", Limit: 0.99},
			{Measure: CheckoutP99, Phase: "hang", Limit: 2.5},
			{Measure: Recovery, Phase: "after", Limit: 5},
		},
	},
	{
		Step: 3, Name: "outage", Incident: "payment fails 5% of charges, then most of them (a brownout), then every charge for 10-20 s, then recovers shakily",
		Rate: NormalRate, Seeds: []int64{31, 32, 33}, Mix: checkouts,
		Draw: outage,
		SLOs: []SLO{
			{Measure: CheckoutAvailability, Phase: "flaky", Limit: 0.9},
			{Measure: CallsPerCheckout, Phase: "brownout", Limit: 0.9},
			{Measure: CallsPerCheckout, Phase: "down", Limit: 0.5},
			{Measure: CheckoutP99, Phase: "down", Limit: 1.0},
			{Measure: Recovery, Phase: "recovered", Limit: 8},
			{Measure: CheckoutAvailability, Phase: "recovered", Limit: 0.97},
		},
	},
	{
		Step: 4, Name: "lost-responses", Incident: "payment charges the card, then loses 30% of its answers; then its database fails over every second",
		Rate: NormalRate, Seeds: []int64{41, 42, 43}, Mix: checkouts,
		Draw: lossy,
		SLOs: []SLO{
			{Measure: DoubleCharges, Limit: 0},
			{Measure: CheckoutAvailability, Phase: "lossy", Limit: 0.95},
			{Measure: CheckoutAvailability, Phase: "failover", Limit: 0.93},
		},
	},
	{
		Step: 5, Name: "slow-replica", Incident: "menu-2 stalls for 1 s on 8% of its reads",
		Rate: 25, Seeds: []int64{51, 52, 53}, Mix: browsing,
		Phases: []Phase{
			{Name: "warm", For: 5 * time.Second},
			{Name: "stalls", For: 15 * time.Second, Faults: []string{"menu-2=tail,p=0.08,latency=1s,fixed=20ms,jitter=30ms"}},
		},
		SLOs: []SLO{
			{Measure: BrowseP99, Phase: "stalls", Limit: 0.3},
			{Measure: FallbackShare, Phase: "stalls", Limit: 0.01},
		},
	},
	{
		Step: 6, Name: "all-replicas-slow", Incident: "after a long calm, every menu replica answers in 100-200 ms",
		Rate: 25, Seeds: []int64{61, 62, 63}, Mix: browsing,
		Phases: []Phase{
			{Name: "warm", For: 30 * time.Second},
			{Name: "slow", For: 15 * time.Second, Faults: []string{
				"menu-1=latency,fixed=100ms,jitter=100ms", "menu-2=latency,fixed=100ms,jitter=100ms", "menu-3=latency,fixed=100ms,jitter=100ms"}},
		},
		SLOs: []SLO{
			{Measure: ExtraMenuReads, Phase: "slow", Limit: 0.12},
			{Measure: BrowseAvailability, Phase: "slow", Limit: 0.99},
			{Measure: FallbackShare, Phase: "slow", Limit: 0.02},
		},
	},
	{
		Step: 7, Name: "auth-down", Incident: "the auth service fails every check for 12 s",
		Rate: NormalRate, Seeds: []int64{71, 72, 73},
		Phases: []Phase{
			{Name: "before", For: 3 * time.Second},
			{Name: "down", For: 12 * time.Second, Faults: []string{"auth=error,status=503"}},
			{Name: "after", For: 5 * time.Second, Clear: []string{"auth"}},
		},
		SLOs: []SLO{
			{Measure: LetInWithoutAuth, Phase: "down", Limit: 0},
			{Measure: BrowseAvailability, Phase: "down", Limit: 0.99},
			{Measure: CheckoutAvailability, Phase: "after", Limit: 0.95},
		},
	},
	{
		Step: 8, Name: "everything", Incident: "three incidents at once, drawn from the seed",
		Rate: 25, Seeds: []int64{81, 82, 83},
		Draw: combined,
		SLOs: []SLO{
			{Measure: BrowseAvailability, Phase: "incidents", Limit: 0.98},
			{Measure: DoubleCharges, Limit: 0},
			{Measure: LetInWithoutAuth, Limit: 0},
			{Measure: CheckoutP99, Phase: "incidents", Limit: 2.5},
			{Measure: Recovery, Phase: "after", Limit: 8},
		},
	},
}

// Mixes of the stages besides the normal one.
var (
	checkoutRush = Mix{ActionRestaurants: 5, ActionMenu: 15, ActionHome: 2, ActionCheckout: 75, ActionTrack: 3}
	checkouts    = Mix{ActionRestaurants: 10, ActionMenu: 30, ActionHome: 3, ActionCheckout: 52, ActionTrack: 5}
	browsing     = Mix{ActionRestaurants: 15, ActionMenu: 70, ActionHome: 10, ActionCheckout: 5}
)

// between returns a draw in [lo, hi) for seed, the stage and k.
func between(seed int64, stage string, k int, lo, hi float64) float64 {
	return lo + (hi-lo)*fooddelivery.Draw(seed, "gameday-"+stage, k)
}

// ms writes d for a fault rule, in whole milliseconds.
func ms(d float64) string { return fmt.Sprintf("%dms", int(d)) }

// rush is the healthy rush (20 s: long enough that payment's 1% tail
// shows on every seed), then payment slow for 10 s (a gray failure:
// every charge takes 300-750 ms or so, the seed sets how much).
func rush(seed int64) []Phase {
	fixed := between(seed, "rush", 0, 250, 400)
	return []Phase{
		{Name: "rush", For: 20 * time.Second},
		{Name: "slow", For: 10 * time.Second, Faults: []string{"payment=latency,fixed=" + ms(fixed) + ",jitter=350ms"}},
	}
}

// outage is payment flaky, then failing most charges (a brownout: the
// seed sets 60-75%), then down for 10-20 s, then back with 10% of
// charges still failing (a shaky recovery, which a breaker that needs
// many clean trials to close never gets through).
func outage(seed int64) []Phase {
	brown := between(seed, "outage", 0, 0.6, 0.75)
	down := time.Duration(between(seed, "outage", 1, 10, 20)) * time.Second
	return []Phase{
		{Name: "flaky", For: 12 * time.Second, Faults: []string{"payment:POST /charges=error,status=500,p=0.05,fixed=60ms,jitter=80ms"}},
		{Name: "brownout", For: 12 * time.Second, Faults: []string{fmt.Sprintf("payment:POST /charges=error,status=503,p=%.2f,fixed=60ms,jitter=80ms", brown)}},
		{Name: "down", For: down, Faults: []string{"payment:POST /charges=error,status=503,fixed=60ms,jitter=80ms"}},
		{Name: "recovered", For: 12 * time.Second, Faults: []string{"payment:POST /charges=error,status=503,p=0.1,fixed=60ms,jitter=80ms"}},
	}
}

// lossy is payment losing 30% of its answers for 15 s, then payment's
// database failing over again and again for 15 s: every second, for
// 100-200 ms (the seed sets how long), every charge fails at once with
// 503. A retry sent at the same instant meets the same failover.
func lossy(seed int64) []Phase {
	out := []Phase{{Name: "lossy", For: 15 * time.Second, Faults: []string{"payment:POST /charges=lose,p=0.3,fixed=60ms,jitter=80ms"}}}
	blip := time.Duration(between(seed, "lossy", 0, 100, 200)) * time.Millisecond
	for range 15 {
		out = append(out,
			Phase{Name: "failover", For: blip, Faults: []string{"payment:POST /charges=error,status=503"}},
			Phase{Name: "failover", For: time.Second - blip, Clear: []string{"payment:POST /charges"}})
	}
	return out
}

// incidents are what the combined stage draws from: each a set of rules
// on distinct targets.
var incidents = [][]string{
	{"payment:POST /charges=hang,max=60s"},
	{"payment:POST /charges=error,status=503"},
	{"payment:POST /charges=lose,p=0.3,fixed=40ms,jitter=40ms"},
	{"menu-2=tail,p=0.08,latency=1s,fixed=20ms,jitter=30ms"},
	{"courier=error,status=503,p=0.5"},
	{"auth=error,status=503,p=0.5"},
}

// combined draws three incidents of different kinds for seed: at most one
// on payment, played together for 20 s after 5 healthy seconds, then 10
// s of recovery.
func combined(seed int64) []Phase {
	var picked []string
	usedPayment := false
	for k := 0; len(picked) < 3 && k < 100; k++ {
		i := int(fooddelivery.Draw(seed, "gameday-incident", k) * float64(len(incidents)))
		spec := incidents[i][0]
		payment := i < 3
		if (payment && usedPayment) || slices.Contains(picked, spec) {
			continue
		}
		usedPayment = usedPayment || payment
		picked = append(picked, spec)
	}
	var clear []string
	for _, spec := range picked {
		clear = append(clear, target(spec))
	}
	return []Phase{
		{Name: "before", For: 3 * time.Second},
		{Name: "incidents", For: 15 * time.Second, Faults: picked},
		{Name: "after", For: 10 * time.Second, Clear: clear},
	}
}

// target is the "service[:route]" of a rule in the -fault syntax.
func target(spec string) string {
	t, _, ok := strings.Cut(spec, "=")
	if !ok {
		panic(fmt.Sprintf("gameday: %q is not a fault rule", spec))
	}
	return t
}
