package learner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/i18n"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/internal/gameday"
)

func TestStatusShowsTheScore(t *testing.T) {
	o := lab.Outcome{
		Info: lab.Info{Lab: lab.Lab{Name: "10-game-day"}},
		Pkg: &gotest.Package{Tests: map[string]*gotest.Test{"TestStep9Experiment": {Name: "TestStep9Experiment", Action: "fail",
			Output: []string{"The game day's score card (seed 7)", gameday.ScoreLine(75, 58, 100, 7)}}}},
		Steps: []lab.StepResult{{N: 1, State: lab.StepPassed}},
	}
	var b bytes.Buffer
	printLabSummary(&b, o, "")
	if !strings.Contains(b.String(), "game day score 75 of 100 (starter 58, reference 100; seed 7)") {
		t.Errorf("status does not show the score:\n%s", b.String())
	}
	o.Info.P = i18n.New("de")
	b.Reset()
	printLabSummary(&b, o, "")
	if !strings.Contains(b.String(), "Game-Day-Punktzahl 75 von 100 (Starter 58, Referenz 100; Seed 7)") {
		t.Errorf("status -lang de does not show the score in German:\n%s", b.String())
	}
}
