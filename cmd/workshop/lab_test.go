package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	const id1 = "0123456789abcdef0123456789abcdef01234567"
	const id2 = "89abcdef0123456789abcdef0123456789abcdef"
	good := "# comment\n\n" + id1 + " labs/01-timeouts/timeouts.go\r\n" + id2 + " labs/02-deadlines/deadline.go\n"
	m, err := parseManifest(good)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"labs/01-timeouts/timeouts.go": id1, "labs/02-deadlines/deadline.go": id2}
	if len(m) != len(want) || m["labs/01-timeouts/timeouts.go"] != id1 || m["labs/02-deadlines/deadline.go"] != id2 {
		t.Errorf("got %v, want %v", m, want)
	}
	// What pin writes, parse reads back.
	again, err := parseManifest(formatManifest(m))
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
		if _, err := parseManifest(text); err == nil {
			t.Errorf("%s: parsed %q without error", name, text)
		}
	}
}

const sampleReadme = "# Lab 01: timeouts\n\n" +
	"## The story\n\nPayment hangs.\n\n" +
	"## The pattern\n\n```go\n## Not a heading\n### Step 9: inside a fence\n```\n\n" +
	"## Steps\n\n### Step 1: Give up on a hanging payment\n\ntext\n\n" +
	"### Step 2 - Fail fast on a black-holed host ###\n\n### Step 3. Measure it\n\n### Notes\n\n" +
	"## Hints\n\n### Step 4: not under Steps\n\n" +
	"## Experiment\n\n| a table | is not counted |\n|---|:-:|\n| nor | its rows |\n\n| a pipe without a delimiter row is prose\n\n## In production\n\nSee [PRODUCTION.md](PRODUCTION.md).\n"

// TestReadmeWordsAsShown counts the words a reader sees: a run of
// backticks indented four columns, or inside an HTML block, opens no code
// block, so the words after it count.
func TestReadmeWordsAsShown(t *testing.T) {
	for name, c := range map[string]struct {
		text  string
		words int
	}{
		"indented fence": {"## Steps\n\nA paragraph\n    ~~~\none two three\n    ~~~\n", 8},
		"html block":     {"## Steps\n\n<div>\n```\none two three\n```\n</div>\n", 6},
		"real fence":     {"## Steps\n\n```\none two three\n```\n", 1},
	} {
		if got := parseReadme(c.text).Words["Steps"]; got != c.words {
			t.Errorf("%s: %d words under Steps, want %d", name, got, c.words)
		}
	}
	r := parseReadme("## hints\n\n" + strings.Repeat("word ", 100) + "\n")
	if problems := readmeWordProblems(r); len(problems) == 0 {
		t.Error(`a "## hints" section of 100 words passed the 60-word limit of the Hints section`)
	}
}

func TestParseReadme(t *testing.T) {
	r := parseReadme(sampleReadme)
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
	if missing := missingSections(r.Sections); len(missing) != 0 {
		t.Errorf("missing sections: got %q, want none", missing)
	}
	if got := missingSections([]string{"The story", "Steps", "The pattern", "Hints", "Experiment", "In production"}); !slices.Equal(got, []string{"Steps"}) {
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

// The README's length is checked outside the link sections, and the
// problem says where the words are.
func TestReadmeWordProblems(t *testing.T) {
	r := readme{Words: map[string]int{"": 40, "The story": 200, "Steps": 1500, "Experiment": 300, "Hints": 20, "In production": 500}}
	got := strings.Join(readmeWordProblems(r), "\n")
	for _, want := range []string{
		"README.md has 2040 words, more than 2000 (code blocks and tables not counted; by section: Steps 1500, Experiment 300, The story 200, (before the first section) 40)",
		"## In production section has 500 words",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	r.Words["Steps"], r.Words["In production"] = 1400, 10
	if p := readmeWordProblems(r); len(p) > 0 {
		t.Errorf("1940 words and short link sections: got %q, want no problem", p)
	}
}

func TestStepNameProblems(t *testing.T) {
	cases := []struct {
		name  string
		tests []string
		want  int // number of problems
	}{
		{"well formed", []string{"TestStep1Hang", "TestStep1Other", "TestStep2Experiment"}, 0},
		{"bad name", []string{"TestHang", "TestStep1Experiment"}, 1},
		{"gap", []string{"TestStep1A", "TestStep3Experiment"}, 1},
		{"no experiment", []string{"TestStep1A", "TestStep2B"}, 1},
		{"experiment not last", []string{"TestStep1Experiment", "TestStep2B"}, 2},
		{"no steps", nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := stepNameProblems(testSource{Tests: c.tests})
			if len(got) != c.want {
				t.Errorf("got %d problems %q, want %d", len(got), got, c.want)
			}
		})
	}
}

func TestFindLab(t *testing.T) {
	labs := []lab{{Name: "01-timeouts", Present: true}, {Name: "04-retry-budgets"}}
	for arg, want := range map[string]string{"01": "01-timeouts", "1": "01-timeouts", "01-timeouts": "01-timeouts", "./labs/04-retry-budgets/": "04-retry-budgets"} {
		l, ok := findLab(labs, arg)
		if !ok || l.Name != want {
			t.Errorf("findLab(%q) = %q, %v; want %q", arg, l.Name, ok, want)
		}
	}
	if _, ok := findLab(labs, "10"); ok {
		t.Error("findLab(10) found a lab")
	}
}

func TestRaceSupported(t *testing.T) {
	for platform, want := range map[string]bool{
		"linux/amd64": true, "darwin/arm64": true, "windows/amd64": true,
		"windows/arm64": false, "linux/386": false, "openbsd/amd64": false,
	} {
		goos, goarch, _ := strings.Cut(platform, "/")
		if got := raceSupported(goos, goarch); got != want {
			t.Errorf("raceSupported(%s) = %v, want %v", platform, got, want)
		}
	}
}
