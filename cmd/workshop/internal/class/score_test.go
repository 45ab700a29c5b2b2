package class

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
	"github.com/gophereats/resilience/internal/gameday"
)

func TestGatherAddsTheScoreColumn(t *testing.T) {
	dir := t.TempDir()
	results := func(learner, scores string) string {
		return `{"version": 3, "status": "fail", "learner": "` + learner + `", "tests": [
		  {"name": "Lab 10 game day, step 1: Rush", "status": "pass", "task_id": 10, "lab": "10-game-day", "step": 1},
		  {"name": "Lab 10 game day, step 2: Hang", "status": "fail", "task_id": 10, "lab": "10-game-day", "step": 2}]` + scores + `}`
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("anna.json", results("anna", `, "scores": {"10-game-day": {"yours": 83, "starter": 59, "reference": 100, "seed": 7}}`))
	write("ben.json", results("ben", ""))
	csvPath := filepath.Join(t.TempDir(), "class.csv")
	var out, errb bytes.Buffer
	if err := Gather([]string{dir, "-csv", csvPath}, &out, &errb); err != nil {
		t.Fatalf("gather: %v\nstderr: %s", err, errb.String())
	}
	want := [][]string{
		{"learner", "10", "10 score", "total", "stuck at", "since last pass", "ran at (UTC)"},
		{"anna", "1/2", "83", "1/2", "10 step 2", "unknown"}, // steps without ran_at
		{"ben", "1/2", "-", "1/2", "10 step 2", "unknown"},
		{"finished", "0/2"},
	}
	got := testkit.TableCells(out.String())
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d:\n%s", len(got), len(want), out.String())
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d: got %q, want %q", i, got[i], want[i])
		}
	}
	f, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(bytes.NewReader(f)).ReadAll()
	if err != nil || len(records) != 3 || !slices.Equal(records[0][:3], []string{"learner", "10-game-day", "10-game-day score"}) || records[1][2] != "83" {
		t.Errorf("CSV = %q, %v; want a 10-game-day score column with anna's 83", records, err)
	}

	for name, scores := range map[string]string{
		"not a score from 0 to 100":  `, "scores": {"10-game-day": {"yours": 140}}`,
		"not a lab's directory name": `, "scores": {"game day": {"yours": 40}}`,
		"the file has no step of it": `, "scores": {"03-retries": {"yours": 40}}`,
		"10-zzz has a score but":     `, "scores": {"10-game-day": {"yours": 10}, "10-zzz": {"yours": 99}}`,
		"seeds are not negative":     `, "scores": {"10-game-day": {"yours": 10, "seed": -3}}`,
	} {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, "x.json"), []byte(results("x", scores)), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if err := Gather([]string{bad}, &out, &errb); err == nil || !strings.Contains(errb.String(), name) {
			t.Errorf("gather of a file with %s: err %v, stderr %q; want it refused, saying %q", scores, err, errb.String(), name)
		}
	}
}

func TestCheckScoresRefusesTwoNamesForOneLab(t *testing.T) {
	r := &Results{
		Tests:  []Test{{Lab: "10-game-day"}, {Lab: "10-zzz"}},
		Scores: map[string]lab.Score{"10-game-day": {Yours: 10}, "10-zzz": {Yours: 99}},
	}
	if err := checkScores(r); err == nil || !strings.Contains(err.Error(), "two names for lab 10") {
		t.Errorf("checkScores = %v; want two names for lab 10 refused", err)
	}
}

func TestStatusJSONExportsTheScore(t *testing.T) {
	ws := &repo.Workspace{Module: "example.com/w"}
	o := lab.Outcome{
		Info: lab.Info{Lab: lab.Lab{Name: "10-game-day"}},
		Pkg: &gotest.Package{Tests: map[string]*gotest.Test{"TestStep9Experiment": {Name: "TestStep9Experiment", Action: "fail",
			Output: []string{"The game day's score card (seed 7)", gameday.ScoreLine(75, 58, 100, 7)}}}},
		Steps: []lab.StepResult{{N: 1, State: lab.StepPassed}},
	}
	r := ResultsOf(ws, []lab.Outcome{o}, EventTimes{})
	if got := r.Scores["10-game-day"]; got != (lab.Score{Yours: 75, Starter: 58, Reference: 100, Seed: 7}) {
		t.Errorf("status -json's scores = %+v", r.Scores)
	}
}
