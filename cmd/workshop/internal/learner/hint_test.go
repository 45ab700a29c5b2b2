package learner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
)

func TestParseHints(t *testing.T) {
	f, problems := lab.ParseHints("HINTS.md", testkit.SampleHints)
	if len(problems) > 0 {
		t.Fatalf("problems: %q", problems)
	}
	if len(f.Steps) != 2 || f.Steps[0].N != 1 || f.Steps[1].N != 3 {
		t.Fatalf("steps: got %+v, want steps 1 and 3", f.Steps)
	}
	one := f.Step(1)
	if len(one) != 2 {
		t.Fatalf("step 1: got %d hints, want 2: %+v", len(one), one)
	}
	if got, want := one[0].Symptom, `"Retryable(HTTP 404) = true"`; got != want {
		t.Errorf("first symptom: got %q, want %q", got, want)
	}
	if got, want := one[0].Body, "List the transient statuses."; got != want {
		t.Errorf("first body: got %q, want %q", got, want)
	}
	if got, want := one[0].Line, 7; got != want {
		t.Errorf("first hint's line: got %d, want %d", got, want)
	}
	wantBody := "Use a timer:\n\n```go\n## not a step\n### not a hint\n```\n\n#### A deeper heading is body text\n\nThe end."
	if one[1].Body != wantBody {
		t.Errorf("second body: got %q, want %q", one[1].Body, wantBody)
	}
	if three := f.Step(3); len(three) != 1 || three[0].Symptom != "`go test -race`: \"WARNING: DATA RACE\"" || three[0].Body != "Take the lock." {
		t.Errorf("step 3: got %+v", three)
	}
	if f.Step(2) != nil {
		t.Errorf("step 2 has no hints, got %+v", f.Step(2))
	}
}

func TestParseHintsProblems(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"not a step", "## Step 1\n\n### a\n\nbody\n\n## Notes\n", `HINTS.md:7: level-2 heading "Notes": want "## Step N"`},
		{"step zero", "## Step 0\n\n### a\n\nbody\n", `HINTS.md:1: level-2 heading "Step 0"`},
		{"out of order", "## Step 2\n\n### a\n\nb\n\n## Step 1\n\n### c\n\nd\n", "HINTS.md:7: step 1 comes after step 2"},
		{"twice", "## Step 1\n\n### a\n\nb\n\n## Step 1\n\n### c\n\nd\n", "HINTS.md:7: step 1 comes after step 1"},
		{"hint before a step", "# Title\n\n### a\n\nbody\n\n## Step 1\n\n### b\n\nc\n", `HINTS.md:3: hint "a" comes before any "## Step N" heading`},
		{"text before the first hint", "## Step 1\n\nstray text\n\n### a\n\nbody\n", `HINTS.md:3: text under "## Step 1" before its first hint`},
		{"empty body", "## Step 1\n\n### a\n\nbody\n\n### b\n\n\n## Step 2\n\n### c\n\nd\n", `HINTS.md:7: hint "b" has no body`},
		{"empty body at the end", "## Step 1\n\n### a\r\n\r\n", `HINTS.md:3: hint "a" has no body`},
		{"step without hints", "## Step 1\n\n## Step 2\n\n### a\n\nb\n", "HINTS.md:1: step 1 has no hint"},
		{"empty heading", "## Step 1\n\n###   \n\nbody\n", "HINTS.md:3: a hint's heading is empty"},
		{"unclosed fence", "## Step 1\n\n### a\n\n```go\ncode\n", "HINTS.md:5: a code block that is never closed"},
		{"a second title", "# One\n\n## Step 1\n\n### a\n\nb\n\n# Two\n", "HINTS.md:9: a level-1 heading belongs only at the top"},
		{"no steps", "# Hints\n\nNothing yet.\n", `HINTS.md:3: no "## Step N" heading`},
	}
	for _, c := range cases {
		_, problems := lab.ParseHints("HINTS.md", c.text)
		found := false
		for _, p := range problems {
			found = found || strings.HasPrefix(p, c.want)
		}
		if !found {
			t.Errorf("%s: got problems %q, want one starting %q", c.name, problems, c.want)
		}
	}
}

func TestHintState(t *testing.T) {
	cache := testkit.UseTempCacheDir(t)
	repo := t.TempDir()
	file, err := hintStatePath(repo)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "gophereats-workshop", "hints.json"); file != want {
		t.Fatalf("state file: got %s, want %s", file, want)
	}

	// Remembered across loads, per repository, lab and step.
	s, note := loadHintState(file)
	if note != "" || s.shown(repo, "03-retries", 1) != 0 {
		t.Fatalf("fresh state: got %+v, note %q", s, note)
	}
	s.setShown(repo, "03-retries", 1, 2)
	s.setShown(repo, "05-breaker", 4, 1)
	s.setShown("/elsewhere", "03-retries", 1, 5)
	if err := s.save(file); err != nil {
		t.Fatal(err)
	}
	again, note := loadHintState(file)
	if note != "" {
		t.Fatalf("note: %s", note)
	}
	for _, c := range []struct {
		repo, Lab string
		step, n   int
	}{{repo, "03-retries", 1, 2}, {repo, "03-retries", 2, 0}, {repo, "05-breaker", 4, 1}, {"/elsewhere", "03-retries", 1, 5}, {repo, "01-timeouts", 1, 0}} {
		if got := again.shown(c.repo, c.Lab, c.step); got != c.n {
			t.Errorf("%s %s step %d: got %d shown, want %d", c.repo, c.Lab, c.step, got, c.n)
		}
	}
	if !again.forget(repo, "03-retries") || again.shown(repo, "03-retries", 1) != 0 || again.shown(repo, "05-breaker", 4) != 1 {
		t.Errorf("forget 03-retries: got %+v", again)
	}
	if again.forget(repo, "03-retries") {
		t.Errorf("forgetting twice reports something forgotten")
	}

	// The atomic write leaves no temporary file behind.
	entries, _ := os.ReadDir(filepath.Dir(file))
	if len(entries) != 1 {
		t.Errorf("the state directory holds %d files, want only hints.json", len(entries))
	}

	// A corrupt file is an empty state with a note, and is rewritten.
	if err := os.WriteFile(file, []byte(`{"repos": {"`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, note = loadHintState(file)
	if !strings.Contains(note, "is corrupt") || s.shown(repo, "03-retries", 1) != 0 {
		t.Errorf("corrupt file: got %+v, note %q; want an empty state and a note", s, note)
	}
	s.setShown(repo, "03-retries", 1, 1)
	if err := s.save(file); err != nil {
		t.Fatal(err)
	}
	if s, note = loadHintState(file); note != "" || s.shown(repo, "03-retries", 1) != 1 {
		t.Errorf("after rewriting the corrupt file: got %+v, note %q", s, note)
	}
}

// The state file never goes into the repository, even when the cache
// directory is inside it.
func TestHintStateOutsideTheRepository(t *testing.T) {
	cache := testkit.UseTempCacheDir(t)
	if p, err := hintStatePath(cache); err == nil && within(cache, p) {
		t.Errorf("with the repository at %s, the state file is %s, inside it", cache, p)
	}
	if !within("/a/b", "/a/b/c") || !within("/a/b", "/a/b") || within("/a/b", "/a/bc") || within("/a/b", "/a") {
		t.Errorf("within is wrong")
	}
}

func TestHintArgs(t *testing.T) {
	for _, c := range []struct {
		args  []string
		Lab   string
		reset bool
		ok    bool
	}{
		{[]string{"03"}, "03", false, true},
		{[]string{"03", "--reset"}, "03", true, true},
		{[]string{"-reset", "3"}, "3", true, true},
		{nil, "", false, false},
		{[]string{"--reset"}, "", false, false},
		{[]string{"03", "04"}, "", false, false},
		{[]string{"03", "--all"}, "", false, false},
	} {
		Lab, reset, ok := HintArgs(c.args)
		if ok != c.ok || (ok && (Lab != c.Lab || reset != c.reset)) {
			t.Errorf("hintArgs(%q) = %q, %v, %v; want %q, %v, %v", c.args, Lab, reset, ok, c.Lab, c.reset, c.ok)
		}
	}
}

func TestHintMatches(t *testing.T) {
	failure := "    retries_test.go:88: step 1: Retryable(HTTP 404) = true, want false: a 404 will never succeed\n    the first attempt to payment timed out after 1s"
	for symptom, want := range map[string]bool{
		`"Retryable(HTTP 404) = true"`:                 true,
		`"retryable(http 404)   = TRUE"`:               true,
		`"the first attempt ... timed out"`:            true,
		`"the first attempt ... answered"`:             false,
		`"Backoff(...) = ..., want ..."`:               false,
		`"retried at once" or "Retryable(HTTP 404)"`:   true,
		"<code>go test -race</code>: no quotes at all": false,
		`"..."`: false,
		`"Retryable(HTTP 503 with X-Dont-Retry: 1) = true" (or 429, 502)`: false,
	} {
		if got := hintMatches(symptom, failure); got != want {
			t.Errorf("hintMatches(%s) = %v, want %v", symptom, got, want)
		}
	}
	if hintMatches(`"anything"`, "") {
		t.Error("an empty failure matched")
	}
}

// TestHintShowsTheQuoteOnScreen prints, of a heading that quotes several
// failures, only the one the learner sees.
func TestHintShowsTheQuoteOnScreen(t *testing.T) {
	list := []lab.Hint{{Symptom: `"reading a menu from it took" or "no hedge, so there was no loser"`, Body: "A question?"}}
	var b strings.Builder
	printHint(nil, &b, list, 0, 1, "step 1: no hedge, so there was no loser: 2 attempts")
	if got, want := b.String(), "Step 1, hint 1 of 1 for this failure: \"no hedge, so there was no loser\"\n\nA question?\n"; got != want {
		t.Errorf("printHint for a matching failure:\n got %q\nwant %q", got, want)
	}
	b.Reset()
	printHint(nil, &b, list, 0, 1, "")
	if got, want := b.String(), "Step 1, hint 1 of 1 for the failure: \"reading a menu from it took\"\n\nA question?\n"; got != want {
		t.Errorf("printHint for another failure:\n got %q\nwant %q", got, want)
	}
}
