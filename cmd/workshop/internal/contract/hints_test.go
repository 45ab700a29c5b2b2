package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// The hints moved out of the READMEs: every lab's HINTS.md parses, and its
// README links to it.
func TestLabHintsParse(t *testing.T) {
	ws, err := repo.Open("../../../..", os.Stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	labs, err := lab.List(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labs {
		if !l.Present {
			continue
		}
		info, err := lab.ReadInfo(ws, l)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range hintsProblems(ws, info) {
			t.Errorf("%s: %s", l.Name, p)
		}
	}
}

// Hints teach before they tell: a chain per symptom, code only last.
func TestHintChainProblems(t *testing.T) {
	f, problems := lab.ParseHints("HINTS.md", "## Step 1\n\n"+
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
	ws, err := repo.Open(root, os.Stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	problems := func(name string) string {
		info, err := lab.ReadInfo(ws, lab.Lab{Name: name, Present: true})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(hintsProblems(ws, info), "\n")
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
