package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const sampleHints = "# Lab 03 (retries): hints\r\n\r\n" +
	"A preamble, ignored.\r\n\r\n" +
	"## Step 1\n\n" +
	"### \"Retryable(HTTP 404) = true\"\n\n" +
	"List the transient statuses.\n\n" +
	"### \"the first attempt ... timed out\"\n\n" +
	"Use a timer:\n\n```go\n## not a step\n### not a hint\n```\n\n#### A deeper heading is body text\n\nThe end.\n\n" +
	"## Step 3 ##\n\n" +
	"### `go test -race`: \"WARNING: DATA RACE\"\n\nTake the lock.\n"

func TestParseHints(t *testing.T) {
	f, problems := parseHints("HINTS.md", sampleHints)
	if len(problems) > 0 {
		t.Fatalf("problems: %q", problems)
	}
	if len(f.Steps) != 2 || f.Steps[0].N != 1 || f.Steps[1].N != 3 {
		t.Fatalf("steps: got %+v, want steps 1 and 3", f.Steps)
	}
	one := f.step(1)
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
	if three := f.step(3); len(three) != 1 || three[0].Symptom != "`go test -race`: \"WARNING: DATA RACE\"" || three[0].Body != "Take the lock." {
		t.Errorf("step 3: got %+v", three)
	}
	if f.step(2) != nil {
		t.Errorf("step 2 has no hints, got %+v", f.step(2))
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
		_, problems := parseHints("HINTS.md", c.text)
		found := false
		for _, p := range problems {
			found = found || strings.HasPrefix(p, c.want)
		}
		if !found {
			t.Errorf("%s: got problems %q, want one starting %q", c.name, problems, c.want)
		}
	}
}

// The hints moved out of the READMEs: every lab's HINTS.md parses, and its
// README links to it.
func TestLabHintsParse(t *testing.T) {
	ws, err := openWorkspace("../..", os.Stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	labs, err := ws.listLabs()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labs {
		if !l.Present {
			continue
		}
		info, err := ws.labInfo(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ws.hintsProblems(info) {
			t.Errorf("%s: %s", l.Name, p)
		}
	}
}

// useTempCacheDir points os.UserCacheDir at a new temporary directory and
// returns what it now says. The go command's own cache, which defaults to a
// directory under it, stays where it was.
func useTempCacheDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("GOCACHE") == "" {
		if d, err := os.UserCacheDir(); err == nil {
			t.Setenv("GOCACHE", filepath.Join(d, "go-build"))
		}
	}
	dir := t.TempDir()
	switch runtime.GOOS {
	case "windows":
		t.Setenv("LocalAppData", dir)
	case "darwin", "ios":
		if os.Getenv("GOPATH") == "" {
			if home, err := os.UserHomeDir(); err == nil {
				t.Setenv("GOPATH", filepath.Join(home, "go"))
			}
		}
		t.Setenv("HOME", dir)
	case "plan9":
		t.Setenv("home", dir)
	default:
		t.Setenv("XDG_CACHE_HOME", dir)
	}
	got, err := os.UserCacheDir()
	if err != nil || !within(dir, got) {
		t.Skipf("cannot point os.UserCacheDir at %s on %s (got %q, %v)", dir, runtime.GOOS, got, err)
	}
	return got
}

func TestHintState(t *testing.T) {
	cache := useTempCacheDir(t)
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
		repo, lab string
		step, n   int
	}{{repo, "03-retries", 1, 2}, {repo, "03-retries", 2, 0}, {repo, "05-breaker", 4, 1}, {"/elsewhere", "03-retries", 1, 5}, {repo, "01-timeouts", 1, 0}} {
		if got := again.shown(c.repo, c.lab, c.step); got != c.n {
			t.Errorf("%s %s step %d: got %d shown, want %d", c.repo, c.lab, c.step, got, c.n)
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
	cache := useTempCacheDir(t)
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
		lab   string
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
		lab, reset, ok := hintArgs(c.args)
		if ok != c.ok || (ok && (lab != c.lab || reset != c.reset)) {
			t.Errorf("hintArgs(%q) = %q, %v, %v; want %q, %v, %v", c.args, lab, reset, ok, c.lab, c.reset, c.ok)
		}
	}
}

// Hints teach before they tell: a chain per symptom, code only last.
func TestHintChainProblems(t *testing.T) {
	f, problems := parseHints("HINTS.md", "## Step 1\n\n"+
		"### \"x\"\n\nWhich errors are transient?\n\n"+
		"### \"x\"\n\nLook at `errors.Is` and `fooddelivery.ErrTimeout`.\n\n"+
		"### \"x\"\n\n```go\nreturn errors.Is(err, fooddelivery.ErrTimeout)\n```\n\n"+
		"### \"y\"\n\nUse `n := max(n, 1)` first.\n\n"+
		"### \"y\"\n\nThe same.\n\n"+
		"### \"z\"\n\nAlone.\n")
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	got := strings.Join(hintChainProblems("HINTS.md", f), "\n")
	for _, want := range []string{
		"HINTS.md:17: hint 1 of 2 for \"\\\"y\\\"\" shows code (`n := max(n, 1)`)",
		"HINTS.md:25: step 1's hint for \"\\\"z\\\"\" is alone",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"\"x\""`) {
		t.Errorf("the chain x is fine, got:\n%s", got)
	}
	for body, want := range map[string]bool{
		"Look at `ctx.Err` and `http.Request.Method`.":    false,
		"Run `go test -run=Step1 ./labs/01-timeouts/`.":   false,
		"`resp.Header.Get(\"Retry-After\")` tells.":       false,
		"`attempt < 63 && base <= cap >> attempt`":        true,
		"`io.LimitReader(resp.Body, 4<<10)`":              true,
		"`timer := time.NewTimer(wait)`":                  true,
		"```go\nselect {}\n```":                           true,
		"`t.tokens = min(t.max, t.tokens+t.ratio)` works": true,
		"`defer cancel()` releases it":                    true,
		"`ratio > 0 || minPerSecond > 0`":                 true,
		"`return err`":                                    true,
		"`go func() { ch <- v }()`":                       true,
		"A `select` and a `defer`.":                       false,
		"Compare with `>=`; `err == nil` means success.":  false,
		"The route `GET /orders/{id}`.":                   false,
		"`1 <= shardSize <= workers`":                     false,
		"`ch <- v` hands it over":                         true,
		"then `n--`":                                      true,
		"`var mu sync.Mutex`":                             true,
		"`case <-ctx.Done():`":                            true,
		"`&http.Client{Timeout: d}`":                      true,
		"<code>x := 1</code>":                             true,
		"Text.\n\n    x := 1\n":                           true,
		"- a list\n\n    continued":                       false,
		"Wait on `<-ctx.Done()`; `1 + headroom` slots.":   false,
		"`GOFLAGS=-race` or `GET /orders?limit=10`":       false,
		"`hint 04 --reset`":                               false,
		"```a``` is inline":                               false,
		"> ~~~go\n> x := 1\n> ~~~":                        true,
		"- ~~~go\n  x := 1":                               true,
		"<pre>x := 1</pre>":                               true,
		"Text.\n\n  \tx := 1":                             true,
		"- a list\n\n      return x":                      true,
		"`attempts=attempts+1`":                           true,
		"`b.tokens+=b.ratio`":                             true,
		"<tt>b.tokens -= 1</tt>":                          true,
		"`&&` joins them":                                 false,
		"`:=` declares":                                   false,
		"`map[string]struct{}` or `chan struct{}`":        false,
		"`Content-Type: application/json; charset=utf-8`": false,
		"\"step 3: 2 retries; want at most 1\"":           false,
		"`go list -m all`":                                false,
		"`GOFLAGS=-race go test ./...`":                   false,
		"`cd internal/bench && go test -bench .`":         false,
		"`GET /orders?limit=10`":                          false,
	} {
		if got := codeIn(body) != ""; got != want {
			t.Errorf("codeIn(%q) = %q, want code: %v", body, codeIn(body), want)
		}
	}
}

// verify's clause 9 names what is wrong with a lab's hints.
func TestHintsProblems(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":              "module example.com/h\n\ngo 1.25\n",
		"labs/01-x/x_test.go": "package x\n\nimport \"testing\"\n\nfunc TestStep1A(t *testing.T) {}\n\nfunc TestStep2Experiment(t *testing.T) {}\n",
		"labs/01-x/README.md": "## The story\n\n## Hints\n\nSee the hints.\n\n## Experiment\n\n[HINTS.md](HINTS.md) is linked from the wrong section.\n",
		"labs/01-x/HINTS.md":  "## Step 1\n\n### a\n\nb\n\n## Step 3\n\n### c\n\n\n",
		"labs/02-y/y_test.go": "package y\n\nimport \"testing\"\n\nfunc TestStep1A(t *testing.T) {}\n",
		"labs/02-y/README.md": "## Hints\n\nThe hints are in [HINTS.md](./HINTS.md#step-1).\n",
		"labs/02-y/HINTS.md":  "## Step 1\n\n### a\n\nWhat does `ctx.Err` say?\n\n### a\n\n`if ctx.Err() != nil { return }`\n",
		"labs/03-z/z_test.go": "package z\n",
		"labs/03-z/README.md": "## Hints\n",
	}
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := openWorkspace(root, os.Stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	problems := func(name string) string {
		info, err := ws.labInfo(lab{Name: name, Present: true})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(ws.hintsProblems(info), "\n")
	}
	got := problems("01-x")
	for _, want := range []string{
		`labs/01-x/HINTS.md:9: hint "c" has no body`,
		`labs/01-x/HINTS.md:7: "## Step 3" has no TestStep3 test`,
		`labs/01-x/HINTS.md:3: step 1's hint for "a" is alone`,
		"README.md's ## Hints section does not link to HINTS.md",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("01-x: problems lack %q:\n%s", want, got)
		}
	}
	if got := problems("02-y"); got != "" {
		t.Errorf("02-y: got problems %q, want none", got)
	}
	if got := problems("03-z"); !strings.Contains(got, "labs/03-z/HINTS.md is missing") {
		t.Errorf("03-z: got %q, want HINTS.md is missing", got)
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
	list := []hint{{Symptom: `"reading a menu from it took" or "no hedge, so there was no loser"`, Body: "A question?"}}
	var b strings.Builder
	printHint(&b, list, 0, 1, "step 1: no hedge, so there was no loser: 2 attempts")
	if got, want := b.String(), "Step 1, hint 1 of 1 for this failure: \"no hedge, so there was no loser\"\n\nA question?\n"; got != want {
		t.Errorf("printHint for a matching failure:\n got %q\nwant %q", got, want)
	}
	b.Reset()
	printHint(&b, list, 0, 1, "")
	if got, want := b.String(), "Step 1, hint 1 of 1 for the failure: \"reading a menu from it took\"\n\nA question?\n"; got != want {
		t.Errorf("printHint for another failure:\n got %q\nwant %q", got, want)
	}
}
