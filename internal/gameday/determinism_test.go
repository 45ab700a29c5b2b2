package gameday

import (
	"bytes"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/gophereats/resilience/fooddelivery/plan"
	reference "github.com/gophereats/resilience/solutions/10-game-day"
)

// TestSamePlanSameSeedSameCard holds lab 10's README promise: the same
// plan on the same seed prints the same score card, byte for byte. It
// plays every stage on the example seed with the reference and with the
// reference hedging as lab 10's starter does (after the median, every
// read, so that hedges and answers race all day), twice, and compares the
// two cards. What makes a play a function of its plan and seed: one P;
// customers who arrive half an interval off the phases' boundaries; a
// hedger that takes an answer due at its timer's instant first; and the
// reads one request fans out at one instant going to a replica, and
// drawing their faults, by their path rather than by the order in which
// they start.
func TestSamePlanSameSeedSameCard(t *testing.T) {
	if testing.Short() {
		t.Skip("plays every stage four times")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as the lab's rig
	eager := reference.Plan()
	eager.Gateway.Hedge = &plan.Hedge{Window: 100, Percentile: 0.5, FirstDelay: 10 * time.Millisecond, Ratio: 1, Burst: 1000}
	card := func() []byte {
		c := Card{Seed: ExampleSeed}
		for _, e := range []Entry{{"eager hedges", eager}, {"reference", reference.Plan()}} {
			var results []Result
			for _, s := range Stages {
				synctest.Test(t, func(t *testing.T) {
					r, err := Play(e.Plan, s, ExampleSeed)
					if err != nil {
						t.Fatal(err)
					}
					results = append(results, r)
				})
			}
			c.Add(e.Name, results)
		}
		var b bytes.Buffer
		c.Write(&b)
		return b.Bytes()
	}
	first, second := card(), card()
	if !bytes.Equal(first, second) {
		diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(first)), B: difflib.SplitLines(string(second)),
			FromFile: "first play", ToFile: "second play", Context: 1})
		t.Errorf("the same plans on seed %d printed two different score cards:\n%s", ExampleSeed, diff)
	}
}
