package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
)

// fixture is a tiny workshop: one lab with two steps (the second holds the
// experiment and one test more), its solution, a mutant that step 1
// catches, one that claims a step it does not fail, and one that only the
// experiment would catch (a mutant's run skips the experiment).
var fixture = map[string]string{
	"go.mod": "module example.com/fixture\n\ngo 1.25\n",
	"labs/01-timeouts/timeouts.go": `// Package timeouts is a fixture lab.
package timeouts

// Budget returns the order budget in seconds. TODO: make it 2.
func Budget() int { return 0 }

// Ratio returns the experiment's ratio. TODO: make it 5.
func Ratio() int { return 0 }
`,
	"labs/01-timeouts/timeouts_test.go": `package timeouts

import "testing"

func TestStep1X(t *testing.T) {
	if got := Budget(); got != 2 {
		t.Fatalf("the budget is %ds; PlaceOrder must give up within 2s (README step 1)", got)
	}
}

func TestStep2Experiment(t *testing.T) {
	if got := Ratio(); got != 5 {
		t.Fatalf("ratio %d, want 5: see step 2", got)
	}
}

func TestStep2NotNegative(t *testing.T) {
	if got := Ratio(); got < 0 {
		t.Fatalf("ratio %d: step 2 wants no negative ratio", got)
	}
}
`,
	"labs/01-timeouts/README.md": "# Lab 01\n\n## The story\n\n## The pattern\n\n## Steps\n\n" +
		"### Step 1: Give up within the budget\n\n### Step 2: Run the experiment\n\n" +
		"## Hints\n\nThe hints are in [HINTS.md](HINTS.md).\n\n## Experiment\n\n## In production\n\n[PRODUCTION.md](PRODUCTION.md)\n",
	"labs/01-timeouts/HINTS.md": "# Lab 01 (timeouts): hints\n\n## Step 1\n\n### \"the budget is 0s\"\n\nWhat does the README give?\n\n" +
		"### \"the budget is 0s\"\n\nReturn 2.\n\n" +
		"## Step 2\n\n### \"ratio 0, want 5\"\n\nThe ratio is a constant.\n\n### \"ratio 0, want 5\"\n\n```go\nfunc Ratio() int { return 5 }\n```\n",
	"labs/01-timeouts/PRODUCTION.md": "# Lab 01: in production\n\n" + strings.Repeat("Production libraries time out calls. ", 12) + "\n",
	"solutions/01-timeouts/timeouts.go": `// Package timeouts is the fixture's solution.
package timeouts

// Budget returns the order budget in seconds.
func Budget() int { return 2 }

// Ratio returns the experiment's ratio.
func Ratio() int { return 5 }
`,
	"solutions/01-timeouts/NOTES.md": "# Notes\n",
	// The running system: learner01.go builds the lab in with -tags
	// learner01, as the real one does. It prints what it was given and
	// exits with status 3 for -fail.
	"cmd/fooddelivery/main.go": `package main

import (
	"fmt"
	"os"
	"strings"
)

var learner = "none"

func main() {
	fmt.Printf("learner code: %s; args: %s\n", learner, strings.Join(os.Args[1:], " "))
	for _, a := range os.Args[1:] {
		if a == "-fail" {
			os.Exit(3)
		}
	}
}
`,
	"cmd/fooddelivery/learner01.go": `//go:build learner01

package main

import (
	"fmt"

	timeouts "example.com/fixture/labs/01-timeouts"
)

func init() { learner = fmt.Sprintf("lab 01, budget %d", timeouts.Budget()) }
`,
	"solutions/01-timeouts/mutants/off-by-one.txtar": `The budget is one second too long.
Caught by step 1.
-- old timeouts.go --
func Budget() int { return 2 }
-- new timeouts.go --
func Budget() int { return 3 }
`,
	"solutions/01-timeouts/mutants/experiment-only.txtar": "The ratio is off by one, which only the experiment sees.\nCaught by step 2.\n" +
		"-- old timeouts.go --\nfunc Ratio() int { return 5 }\n-- new timeouts.go --\nfunc Ratio() int { return 4 }\n",
	"solutions/01-timeouts/mutants/wrong-claim.txtar": "The budget is zero.\r\nCaught by step 2.\r\n" +
		"-- old timeouts.go --\r\nfunc Budget() int { return 2 }\r\n-- new timeouts.go --\r\nfunc Budget() int { return 0 }\r\n",
}

func writeFixture(t *testing.T, root string) {
	t.Helper()
	for rel, content := range fixture {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=fixture", "-c", "user.email=fixture@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newFixtureRepo writes the fixture into a new git repository, pins its
// starter and commits it; the status cache goes to a temporary directory.
func newFixtureRepo(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command on a fixture module")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GOFLAGS", "")
	testkit.UseTempCacheDir(t)
	root := t.TempDir()
	writeFixture(t, root)
	gitIn(t, root, "init", "-q")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"workshop", "-C", root, "pin"}, &out, &out); err != nil {
		t.Fatalf("pin: %v\n%s", err, out.String())
	}
	manifest, err := os.ReadFile(filepath.Join(root, "labs", "starters.txt"))
	if err != nil || !strings.Contains(string(manifest), " labs/01-timeouts/timeouts.go\n") {
		t.Fatalf("pin wrote %q, %v; want a line for labs/01-timeouts/timeouts.go", manifest, err)
	}
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "-q", "-m", "fixture")
	return root
}
