package lab

import (
	"path/filepath"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/internal/gameday"
)

// OutcomeWithOutput is a lab outcome whose experiment wrote lines.
func OutcomeWithOutput(lines ...string) Outcome {
	return Outcome{Pkg: &gotest.Package{Tests: map[string]*gotest.Test{
		"TestStep9Experiment": {Name: "TestStep9Experiment", Action: "fail", Output: lines},
	}}}
}

func TestScoreReadsTheScoreCardsLastLine(t *testing.T) {
	line := gameday.ScoreLine(83.4, 58.6, 100, gameday.ExampleSeed)
	o := OutcomeWithOutput("The game day's score card (seed 7)", "", line)
	got, ok := o.Score()
	want := Score{Yours: 83, Starter: 59, Reference: 100, Seed: 7}
	if !ok || got != want {
		t.Fatalf("score of %q = %+v, %v; want %+v", line, got, ok, want)
	}
	if s := got.String(); s != "game day score 83 of 100 (starter 59, reference 100; seed 7)" {
		t.Errorf("String() = %q", s)
	}
	for _, other := range []string{
		"The game day's score: yours 83 of 10 (starter 59, reference 100; seed 7)",
		"step 9: your plan scores 83 of 100",
		"The game day's score: yours 1000 of 100 (starter 59, reference 100; seed 7)",
	} {
		if s, ok := OutcomeWithOutput("The game day's score card (seed 7)", other).Score(); ok {
			t.Errorf("score of %q = %+v, want none", other, s)
		}
	}
	forged := gameday.ScoreLine(100, 61, 100, 7)
	if s, ok := OutcomeWithOutput(forged).Score(); ok {
		t.Errorf("a score line with no card before it (printed by the learner's code) scored %+v", s)
	}
	if s, ok := OutcomeWithOutput(forged, "The game day's score card (seed 7)", line).Score(); !ok || s != want {
		t.Errorf("a forged line before the real card: score %+v, %v; want the card's %+v", s, ok, want)
	}
	other := Outcome{Pkg: &gotest.Package{Tests: map[string]*gotest.Test{
		"TestStep1Rush": {Name: "TestStep1Rush", Output: []string{"The game day's score card (seed 7)", forged}},
	}}}
	if s, ok := other.Score(); ok {
		t.Errorf("a score printed by a step test, not the experiment, scored %+v", s)
	}
	if _, ok := (Outcome{}).Score(); ok {
		t.Error("a lab that never ran has a score")
	}
}

func TestCapstoneIsTheLabWhoseTestsPlayTheGameDay(t *testing.T) {
	ws := &repo.Workspace{Root: "../../../..", Module: "github.com/gophereats/resilience"}
	for Lab, want := range map[string]bool{"10-game-day": true, "05-breaker": false} {
		files, err := filepath.Glob(filepath.Join(ws.Root, "labs", Lab, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("labs/%s has no test files: %v", Lab, err)
		}
		var rel []string
		for _, f := range files {
			r, _ := filepath.Rel(ws.Root, f)
			rel = append(rel, filepath.ToSlash(r))
		}
		if got := parseTestSource(ws, rel).Capstone(ws.Module); got != want {
			t.Errorf("labs/%s: capstone = %v, want %v (it runs without -race only when its tests play the game day)", Lab, got, want)
		}
	}
}
