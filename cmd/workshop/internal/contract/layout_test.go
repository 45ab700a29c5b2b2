package contract

import (
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

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
		if got := lab.ParseReadme(c.text).Words["Steps"]; got != c.words {
			t.Errorf("%s: %d words under Steps, want %d", name, got, c.words)
		}
	}
	r := lab.ParseReadme("## hints\n\n" + strings.Repeat("word ", 100) + "\n")
	if problems := readmeWordProblems(r); len(problems) == 0 {
		t.Error(`a "## hints" section of 100 words passed the 60-word limit of the Hints section`)
	}
}

// The README's length is checked outside the link sections, and the
// problem says where the words are.
func TestReadmeWordProblems(t *testing.T) {
	r := lab.Readme{Words: map[string]int{"": 40, "The story": 200, "Steps": 1500, "Experiment": 300, "Hints": 20, "In production": 500}}
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
			got := stepNameProblems(lab.TestSource{Tests: c.tests})
			if len(got) != c.want {
				t.Errorf("got %d problems %q, want %d", len(got), got, c.want)
			}
		})
	}
}
