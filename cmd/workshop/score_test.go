package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gophereats/resilience/internal/gameday"
)

// outcomeWithOutput is a lab outcome whose experiment wrote lines.
func outcomeWithOutput(lines ...string) labOutcome {
	return labOutcome{pkg: &pkgResult{Tests: map[string]*testResult{
		"TestStep9Experiment": {Name: "TestStep9Experiment", Action: "fail", Output: lines},
	}}}
}

func TestScoreReadsTheScoreCardsLastLine(t *testing.T) {
	line := gameday.ScoreLine(83.4, 58.6, 100, gameday.ExampleSeed)
	o := outcomeWithOutput("The game day's score card (seed 7)", "", line)
	got, ok := o.score()
	want := gameScore{Yours: 83, Starter: 59, Reference: 100, Seed: 7}
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
		if s, ok := outcomeWithOutput("The game day's score card (seed 7)", other).score(); ok {
			t.Errorf("score of %q = %+v, want none", other, s)
		}
	}
	forged := gameday.ScoreLine(100, 61, 100, 7)
	if s, ok := outcomeWithOutput(forged).score(); ok {
		t.Errorf("a score line with no card before it (printed by the learner's code) scored %+v", s)
	}
	if s, ok := outcomeWithOutput(forged, "The game day's score card (seed 7)", line).score(); !ok || s != want {
		t.Errorf("a forged line before the real card: score %+v, %v; want the card's %+v", s, ok, want)
	}
	other := labOutcome{pkg: &pkgResult{Tests: map[string]*testResult{
		"TestStep1Rush": {Name: "TestStep1Rush", Output: []string{"The game day's score card (seed 7)", forged}},
	}}}
	if s, ok := other.score(); ok {
		t.Errorf("a score printed by a step test, not the experiment, scored %+v", s)
	}
	if _, ok := (labOutcome{}).score(); ok {
		t.Error("a lab that never ran has a score")
	}
}

func TestStatusShowsAndExportsTheScore(t *testing.T) {
	ws := &workspace{module: "example.com/w"}
	o := outcomeWithOutput("The game day's score card (seed 7)", gameday.ScoreLine(75, 58, 100, 7))
	o.info = labInfo{lab: lab{Name: "10-game-day"}}
	o.steps = []stepResult{{N: 1, State: stepPassed}}
	var b bytes.Buffer
	printLabSummary(&b, o, "")
	if !strings.Contains(b.String(), "game day score 75 of 100 (starter 58, reference 100; seed 7)") {
		t.Errorf("status does not show the score:\n%s", b.String())
	}
	r := ws.classResultsOf([]labOutcome{o}, eventTimes{})
	if got := r.Scores["10-game-day"]; got != (gameScore{Yours: 75, Starter: 58, Reference: 100, Seed: 7}) {
		t.Errorf("status -json's scores = %+v", r.Scores)
	}
}

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
	if err := gather([]string{dir, "-csv", csvPath}, &out, &errb); err != nil {
		t.Fatalf("gather: %v\nstderr: %s", err, errb.String())
	}
	want := [][]string{
		{"learner", "10", "10 score", "total", "ran at (UTC)"},
		{"anna", "1/2", "83", "1/2"},
		{"ben", "1/2", "-", "1/2"},
		{"finished", "0/2"},
	}
	got := tableCells(out.String())
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
		if err := gather([]string{bad}, &out, &errb); err == nil || !strings.Contains(errb.String(), name) {
			t.Errorf("gather of a file with %s: err %v, stderr %q; want it refused, saying %q", scores, err, errb.String(), name)
		}
	}
}

func TestCapstoneIsTheLabWhoseTestsPlayTheGameDay(t *testing.T) {
	ws := &workspace{root: "../..", module: "github.com/gophereats/resilience"}
	for lab, want := range map[string]bool{"10-game-day": true, "05-breaker": false} {
		files, err := filepath.Glob(filepath.Join(ws.root, "labs", lab, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("labs/%s has no test files: %v", lab, err)
		}
		var rel []string
		for _, f := range files {
			r, _ := filepath.Rel(ws.root, f)
			rel = append(rel, filepath.ToSlash(r))
		}
		if got := ws.parseTestSource(rel).capstone(ws.module); got != want {
			t.Errorf("labs/%s: capstone = %v, want %v (it runs without -race only when its tests play the game day)", lab, got, want)
		}
	}
}

func TestCheckScoresRefusesTwoNamesForOneLab(t *testing.T) {
	r := &classResults{
		Tests:  []classTest{{Lab: "10-game-day"}, {Lab: "10-zzz"}},
		Scores: map[string]gameScore{"10-game-day": {Yours: 10}, "10-zzz": {Yours: 99}},
	}
	if err := checkScores(r); err == nil || !strings.Contains(err.Error(), "two names for lab 10") {
		t.Errorf("checkScores = %v; want two names for lab 10 refused", err)
	}
}
