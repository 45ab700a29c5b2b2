package lab

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
)

func TestParseManifest(t *testing.T) {
	const id1 = "0123456789abcdef0123456789abcdef01234567"
	const id2 = "89abcdef0123456789abcdef0123456789abcdef"
	good := "# comment\n\n" + id1 + " labs/01-timeouts/timeouts.go\r\n" + id2 + " labs/02-deadlines/deadline.go\n"
	m, err := ParseManifest(good)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"labs/01-timeouts/timeouts.go": id1, "labs/02-deadlines/deadline.go": id2}
	if len(m) != len(want) || m["labs/01-timeouts/timeouts.go"] != id1 || m["labs/02-deadlines/deadline.go"] != id2 {
		t.Errorf("got %v, want %v", m, want)
	}
	// What pin writes, parse reads back.
	again, err := ParseManifest(formatManifest(m))
	if err != nil || len(again) != 2 || again["labs/01-timeouts/timeouts.go"] != id1 {
		t.Errorf("round trip: got %v, %v", again, err)
	}

	bad := map[string]string{
		"missing path":      id1 + "\n",
		"short id":          "abc123 labs/01-timeouts/x.go\n",
		"outside labs":      id1 + " cmd/workshop/main.go\n",
		"backslashes":       id1 + ` labs\01-timeouts\x.go` + "\n",
		"unclean path":      id1 + " labs/../go.mod\n",
		"listed twice":      id1 + " labs/01-timeouts/x.go\n" + id2 + " labs/01-timeouts/x.go\n",
		"upper-case hex id": strings.ToUpper(id1) + " labs/01-timeouts/x.go\n",
	}
	for name, text := range bad {
		if _, err := ParseManifest(text); err == nil {
			t.Errorf("%s: parsed %q without error", name, text)
		}
	}
}

func TestParseReadme(t *testing.T) {
	r := ParseReadme(testkit.SampleReadme)
	wantSections := []string{"The story", "The pattern", "Steps", "Hints", "Experiment", "In production"}
	if !slices.Equal(r.Sections, wantSections) {
		t.Errorf("sections: got %q, want %q", r.Sections, wantSections)
	}
	wantSteps := map[int]string{1: "Give up on a hanging payment", 2: "Fail fast on a black-holed host", 3: "Measure it"}
	if len(r.Steps) != len(wantSteps) {
		t.Errorf("steps: got %v, want %v", r.Steps, wantSteps)
	}
	for n, title := range wantSteps {
		if r.Steps[n] != title {
			t.Errorf("step %d title: got %q, want %q", n, r.Steps[n], title)
		}
	}
	if got, want := r.Anchors[1], "step-1-give-up-on-a-hanging-payment"; got != want {
		t.Errorf("step 1 anchor: got %q, want %q", got, want)
	}
	if missing := MissingSections(r.Sections); len(missing) != 0 {
		t.Errorf("missing sections: got %q, want none", missing)
	}
	if got := MissingSections([]string{"The story", "Steps", "The pattern", "Hints", "Experiment", "In production"}); !slices.Equal(got, []string{"Steps"}) {
		t.Errorf("out of order: got %q, want [Steps]", got)
	}
	if !r.ProductionLink {
		t.Error("the In production section's link to PRODUCTION.md was not seen")
	}
	wantWords := map[string]int{"": 3, "The story": 4, "The pattern": 2, "Steps": 25, "Hints": 6, "Experiment": 10, "In production": 4}
	if !maps.Equal(r.Words, wantWords) {
		t.Errorf("words: got %v, want %v (code blocks and tables not counted)", r.Words, wantWords)
	}
}

func TestFindLab(t *testing.T) {
	labs := []Lab{{Name: "01-timeouts", Present: true}, {Name: "04-retry-budgets"}}
	for arg, want := range map[string]string{"01": "01-timeouts", "1": "01-timeouts", "01-timeouts": "01-timeouts", "./labs/04-retry-budgets/": "04-retry-budgets"} {
		l, ok := Find(labs, arg)
		if !ok || l.Name != want {
			t.Errorf("findLab(%q) = %q, %v; want %q", arg, l.Name, ok, want)
		}
	}
	if _, ok := Find(labs, "10"); ok {
		t.Error("findLab(10) found a lab")
	}
}

func TestRaceSupported(t *testing.T) {
	for platform, want := range map[string]bool{
		"linux/amd64": true, "darwin/arm64": true, "windows/amd64": true,
		"windows/arm64": false, "linux/386": false, "openbsd/amd64": false,
	} {
		goos, goarch, _ := strings.Cut(platform, "/")
		if got := repo.RaceSupported(goos, goarch); got != want {
			t.Errorf("raceSupported(%s) = %v, want %v", platform, got, want)
		}
	}
}

// A mutant's run skips the experiment: its step leaves the outcome when
// the experiment is all it holds, and stays when other tests share it.
func TestWithoutExperiment(t *testing.T) {
	info := Info{
		Lab:   Lab{Name: "03-retries", Present: true},
		Tests: TestSource{Tests: []string{"TestStep1A", "TestStep2B", "TestStep2Experiment"}},
		Steps: []int{1, 2},
	}
	if got := info.ExperimentSteps(); len(got) != 0 {
		t.Errorf("step 2 holds TestStep2B beside the experiment: ExperimentSteps = %v, want none", got)
	}
	info.Tests.Tests = []string{"TestStep1A", "TestStep2B", "TestStep3Experiment"}
	info.Steps = []int{1, 2, 3}
	if got := info.ExperimentSteps(); !slices.Equal(got, []int{3}) {
		t.Errorf("ExperimentSteps = %v, want [3]", got)
	}
	w := info.WithoutExperiment()
	if !slices.Equal(w.Steps, []int{1, 2}) || !slices.Equal(w.Tests.Tests, []string{"TestStep1A", "TestStep2B"}) {
		t.Errorf("WithoutExperiment: steps %v, tests %v; want [1 2] and the two step tests", w.Steps, w.Tests.Tests)
	}
	if !slices.Equal(info.Tests.Tests, []string{"TestStep1A", "TestStep2B", "TestStep3Experiment"}) {
		t.Errorf("WithoutExperiment changed its receiver's tests: %v", info.Tests.Tests)
	}
	m := Mutant{Name: "x", Step: 3}
	if p := m.StepProblem(info); !strings.Contains(p, "step 3, lab 03's experiment") {
		t.Errorf("a mutant caught by the experiment: StepProblem = %q, want it to name the experiment", p)
	}
	m.Step = 2
	if p := m.StepProblem(info); p != "" {
		t.Errorf("a mutant caught by step 2: StepProblem = %q, want none", p)
	}
}
