package gameday

import (
	"os"
	"testing"

	"github.com/gophereats/resilience/internal/gameday"
	reference "github.com/gophereats/resilience/solutions/10-game-day"
)

// TestStep9Experiment plays every stage once on the README's example seed
// with three plans, the starter's, yours and the reference's, and prints
// the score card: every SLO's figure side by side, each stage's share of
// SLOs met, and the 0-100 score (gameday.Score). It passes when your plan
// meets every SLO of every stage on that seed too.
//
//	go test -v -run Experiment ./labs/10-game-day/
func TestStep9Experiment(t *testing.T) {
	plans := []gameday.Entry{{Name: "starter", Plan: starterPlan()}, {Name: "yours", Plan: Plan()}, {Name: "reference", Plan: reference.Plan()}}
	card := gameday.Card{Seed: gameday.ExampleSeed}
	for i, e := range plans {
		whose := "your plan"
		if i != 1 {
			whose = "the " + e.Name + "'s plan"
		}
		var results []gameday.Result
		for _, s := range gameday.Stages {
			r, ok := play(t, 9, whose, e.Plan, s, gameday.ExampleSeed)
			if !ok {
				return
			}
			results = append(results, r)
		}
		card.Add(e.Name, results)
	}
	card.Write(os.Stdout)
	yours := card.Score("yours")
	if yours < 100 {
		t.Errorf("step 9: your plan scores %.0f of 100 on the example seed %d (the starter %.0f, the reference %.0f): "+
			"the card above shows each SLO it missed; the steps before this one say why",
			yours, gameday.ExampleSeed, card.Score("starter"), card.Score("reference"))
	}
}
