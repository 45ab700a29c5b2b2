package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/class"
	"github.com/gophereats/resilience/cmd/workshop/internal/learner"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
)

func TestVerifyFixtureLab(t *testing.T) {
	root := newFixtureRepo(t)
	ctx := context.Background()
	var out bytes.Buffer

	// The learner solves step 1: verify must still check the pinned starter.
	edited := strings.Replace(fixture["labs/01-timeouts/timeouts.go"], "func Budget() int { return 0 }", "func Budget() int { return 2 }", 1)
	if err := os.WriteFile(filepath.Join(root, "labs", "01-timeouts", "timeouts.go"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("status shows the next step", func(t *testing.T) {
		out.Reset()
		if err := run(ctx, []string{"workshop", "-C", root}, &out, &out); err != nil {
			t.Fatalf("status: %v\n%s", err, out.String())
		}
		for _, want := range []string{
			"Lab 01 timeouts         1 of 2 steps passed",
			"passed   step 1: Give up within the budget",
			"failing  step 2: Run the experiment",
			"Lab 02 deadlines        coming soon",
			"Next: lab 01 step 2: Run the experiment -> read labs/01-timeouts/README.md#step-2-run-the-experiment, then run go run ./cmd/workshop watch 01",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("status output lacks %q:\n%s", want, out.String())
			}
		}
	})

	t.Run("status -json reports each step as a results.json", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if err := run(ctx, []string{"workshop", "-C", root, "status", "-json", "-name", "alice"}, &stdout, &stderr); err != nil {
			t.Fatalf("status -json: %v\n%s", err, stderr.String())
		}
		r := decodeResults(t, stdout.Bytes())
		if r.Status != class.ResultFail || r.Learner != "alice" || len(r.Commit) < 40 || r.RanAt == "" {
			t.Errorf("top level: got status %q learner %q commit %q ran_at %q, want fail, alice, the HEAD commit and a time",
				r.Status, r.Learner, r.Commit, r.RanAt)
		}
		if len(r.Tests) != 2 {
			t.Fatalf("got %d tests, want 2 (one per step):\n%s", len(r.Tests), stdout.String())
		}
		one, two := r.Tests[0], r.Tests[1]
		if one.Name != "Lab 01 timeouts, step 1: Give up within the budget" || one.Status != class.ResultPass || one.TaskID != 1 || one.RanAt == "" {
			t.Errorf("step 1: got %+v", one)
		}
		if two.Name != "Lab 01 timeouts, step 2: Run the experiment" || two.Status != class.ResultFail ||
			!strings.Contains(two.Message, "TestStep2Experiment failed:\n") || !strings.Contains(two.Message, "ratio 0, want 5: see step 2") {
			t.Errorf("step 2: got %+v, want fail with the test's story", two)
		}

		// The lab does not compile: every step is an error, and so is the
		// whole file, its message the compile error.
		file := filepath.Join(root, "labs", "01-timeouts", "timeouts.go")
		good, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile(file, good, 0o644) })
		if err := os.WriteFile(file, append(good, "func broken() int { return missing }\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		files := t.TempDir()
		os.WriteFile(filepath.Join(files, "alice.json"), stdout.Bytes(), 0o644)
		stdout.Reset()
		if err := run(ctx, []string{"workshop", "-C", root, "status", "-json", "-name", "bob"}, &stdout, &stderr); err != nil {
			t.Fatalf("status -json on a lab that does not compile: %v, want exit status 0", err)
		}
		r = decodeResults(t, stdout.Bytes())
		if r.Status != class.ResultError || !strings.Contains(r.Message, "undefined: missing") {
			t.Errorf("top level: got status %q message %q, want error with the compile error", r.Status, r.Message)
		}
		for _, test := range r.Tests {
			if test.Status != class.ResultError || !strings.Contains(test.Message, "undefined: missing") {
				t.Errorf("%s: got %q %q, want error with the compile error", test.Name, test.Status, test.Message)
			}
		}

		// The two files gathered.
		os.WriteFile(filepath.Join(files, "bob.json"), stdout.Bytes(), 0o644)
		stdout.Reset()
		if err := run(ctx, []string{"workshop", "gather", files}, &stdout, &stderr); err != nil {
			t.Fatalf("gather: %v\n%s", err, stderr.String())
		}
		got := testkit.TableCells(stdout.String())
		if len(got) != 4 || !slices.Equal(got[1][:3], []string{"alice", "1/2", "1/2"}) || !slices.Equal(got[2][:3], []string{"bob", "build error", "0/2"}) {
			t.Errorf("gather: got %q, want alice 1/2 and bob build error:\n%s", got, stdout.String())
		}
	})

	t.Run("check summarises the failing step", func(t *testing.T) {
		out.Reset()
		err := run(ctx, []string{"workshop", "-C", root, "check", "01"}, &out, &out)
		if !errors.Is(err, repo.ErrFailed) {
			t.Fatalf("check: got %v, want errFailed\n%s", err, out.String())
		}
		if want := "ratio 0, want 5: see step 2"; !strings.Contains(out.String(), want) {
			t.Errorf("check output lacks the failure message %q:\n%s", want, out.String())
		}
	})

	t.Run("hint shows the next hint of the first failing step, one per call", func(t *testing.T) {
		cache := testkit.UseTempCacheDir(t)
		hint := func(args ...string) string {
			t.Helper()
			out.Reset()
			if err := run(ctx, append([]string{"workshop", "-C", root, "hint"}, args...), &out, &out); err != nil {
				t.Fatalf("hint %s: %v\n%s", strings.Join(args, " "), err, out.String())
			}
			return out.String()
		}
		expect := func(text string, wants ...string) {
			t.Helper()
			for _, want := range wants {
				if !strings.Contains(text, want) {
					t.Errorf("hint output lacks %q:\n%s", want, text)
				}
			}
		}
		first := hint("01")
		expect(first,
			"the first step that does not pass is step 2: Run the experiment",
			"ratio 0, want 5: see step 2",
			"Step 2, hint 1 of 2 for this failure: \"ratio 0, want 5\"\n\nThe ratio is a constant.\n",
			"1 more hint for this failure: run go run ./cmd/workshop hint 01 again.")
		expect(hint("1"), "Step 2, hint 2 of 2 for this failure: \"ratio 0, want 5\"\n\n```go\nfunc Ratio() int { return 5 }\n```\n", "That was the last hint for step 2.")
		expect(hint("01-timeouts"), "You have seen every hint for this failure; here is the most explicit again.", "Step 2, hint 2 of 2 for this failure")

		// Remembered outside the repository, per repository and lab.
		data, err := os.ReadFile(filepath.Join(cache, "gophereats-workshop", "hints.json"))
		if err != nil {
			t.Fatal(err)
		}
		var state struct {
			Repos map[string]map[string]map[int]int `json:"repos"`
		}
		resolved, _ := filepath.EvalSymlinks(root) // macOS's /var is /private/var
		if err := json.Unmarshal(data, &state); err != nil || state.Repos[resolved]["01-timeouts"][2] != 0b11 {
			t.Errorf("state file: %v, %s; want hints 1 and 2 of step 2 shown for lab 01 of %s", err, data, root)
		}
		if status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=all").Output(); err != nil || strings.Contains(string(status), "??") {
			t.Errorf("git status: %v; hint must leave no file in the repository:\n%s", err, status)
		}

		expect(hint("01", "--reset"), "Forgot the hints shown for lab 01")
		expect(hint("01"), "Step 2, hint 1 of 2 for this failure")

		// A corrupt state file is noted and replaced.
		if err := os.WriteFile(filepath.Join(cache, "gophereats-workshop", "hints.json"), []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		expect(hint("01"), "is corrupt", "Step 2, hint 1 of 2 for this failure")
		expect(hint("01"), "Step 2, hint 2 of 2 for this failure")

		// A lab that does not compile gets no hint; one that passes neither.
		file := filepath.Join(root, "labs", "01-timeouts", "timeouts.go")
		good, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile(file, good, 0o644) })
		os.WriteFile(file, append(good, "func broken() int { return missing }\n"...), 0o644)
		out.Reset()
		if err := run(ctx, []string{"workshop", "-C", root, "hint", "01"}, &out, &out); !errors.Is(err, repo.ErrFailed) {
			t.Errorf("hint on a lab that does not compile: got %v, want errFailed", err)
		}
		expect(out.String(), "does not compile: fix the compile error first", "undefined: missing")
		os.WriteFile(file, []byte(strings.Replace(string(good), "func Ratio() int { return 0 }", "func Ratio() int { return 5 }", 1)), 0o644)
		expect(hint("01"), "Every step of lab 01 passes: no hint needed", "solution 01")
	})

	t.Run("live builds the learner's code into the running system and passes the flags on", func(t *testing.T) {
		out.Reset()
		if err := run(ctx, []string{"workshop", "-C", root, "live", "1", "-seed", "4"}, &out, &out); err != nil {
			t.Fatalf("live 1: %v\n%s", err, out.String())
		}
		if want := "learner code: lab 01, budget 2; args: -seed 4 -lab 01=learner"; !strings.Contains(out.String(), want) {
			t.Errorf("live 1 -seed 4 output lacks %q:\n%s", want, out.String())
		}

		out.Reset()
		if err := run(ctx, []string{"workshop", "-C", root, "live", "--", "-h"}, &out, &out); err != nil {
			t.Fatalf("live -- -h: %v\n%s", err, out.String())
		}
		if want := "args: -h -lab 01=learner"; !strings.Contains(out.String(), want) {
			t.Errorf("live without a lab runs the labs started (01 here) as learner, their flags last; output lacks %q:\n%s", want, out.String())
		}

		out.Reset()
		err := run(ctx, []string{"workshop", "-C", root, "live", "01", "-fail"}, &out, &out)
		var status *learner.ExitError
		if !errors.As(err, &status) || status.Code != 3 {
			t.Errorf("live 01 -fail: got %v, want the system's exit status 3", err)
		}
	})

	t.Run("live names a lab that does not compile", func(t *testing.T) {
		file := filepath.Join(root, "labs", "01-timeouts", "timeouts.go")
		good, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile(file, good, 0o644) })
		if err := os.WriteFile(file, append(good, "func broken() int { return missing }\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		err = run(ctx, []string{"workshop", "-C", root, "live", "01"}, &out, &out)
		if !errors.Is(err, repo.ErrFailed) {
			t.Errorf("live 01 on a lab that does not compile: got %v, want errFailed", err)
		}
		for _, want := range []string{"lab 01-timeouts does not compile:", "timeouts.go", "undefined: missing"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("live output lacks %q:\n%s", want, out.String())
			}
		}
		if strings.Contains(out.String(), "learner code:") {
			t.Errorf("the system ran although its lab does not compile:\n%s", out.String())
		}
	})

	t.Run("mutant lists the mutants, shows one as a diff and tests it", func(t *testing.T) {
		out.Reset()
		if err := run(ctx, []string{"workshop", "-C", root, "mutant", "01"}, &out, &out); err != nil {
			t.Fatalf("mutant 01: %v\n%s", err, out.String())
		}
		for _, want := range []string{"3 mutants in solutions/01-timeouts/mutants:", "step 1  off-by-one", "The budget is one second too long."} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("mutant 01 output lacks %q:\n%s", want, out.String())
			}
		}

		out.Reset()
		if err := run(ctx, []string{"workshop", "-C", root, "mutant", "01", "off-by-one"}, &out, &out); err != nil {
			t.Fatalf("mutant 01 off-by-one: %v\n%s", err, out.String())
		}
		for _, want := range []string{
			"--- solutions/01-timeouts/timeouts.go\n",
			"-func Budget() int { return 2 }\n+func Budget() int { return 3 }\n",
			"failing  step 1: Give up within the budget",
			"Caught by step 1, as the mutant says.",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("mutant 01 off-by-one output lacks %q:\n%s", want, out.String())
			}
		}

		out.Reset()
		err := run(ctx, []string{"workshop", "-C", root, "mutant", "01", "wrong-claim"}, &out, &out)
		if !errors.Is(err, repo.ErrFailed) || !strings.Contains(out.String(), "NOT CAUGHT: step 2 passes against the mutant (failing instead: step 1)") {
			t.Errorf("mutant 01 wrong-claim: got %v, want errFailed and NOT CAUGHT:\n%s", err, out.String())
		}

		out.Reset()
		err = run(ctx, []string{"workshop", "-C", root, "mutant", "01", "off-by-two"}, &out, &out)
		if !errors.Is(err, repo.ErrFailed) || !strings.Contains(out.String(), `no mutant "off-by-two"`) || strings.Contains(out.String(), "usage:") {
			t.Errorf("mutant 01 off-by-two: got %v, want errFailed naming the mutant, without the usage:\n%s", err, out.String())
		}
	})

	t.Run("verify runs the lab contract", func(t *testing.T) {
		// The learner's copy no longer has the API the running system
		// calls: the build with the learner tag still uses the pinned one.
		file := filepath.Join(root, "labs", "01-timeouts", "timeouts.go")
		edited, _ := os.ReadFile(file)
		t.Cleanup(func() { os.WriteFile(file, edited, 0o644) })
		os.WriteFile(file, []byte(strings.Replace(string(edited), "func Budget()", "func Budget2()", 1)), 0o644)
		t.Setenv("CGO_ENABLED", "0") // the output below is without -race
		out.Reset()
		if err := run(ctx, []string{"workshop", "-C", root, "verify", "01"}, &out, io.Discard); !errors.Is(err, repo.ErrFailed) {
			t.Fatalf("verify 01: got %v, want ErrFailed (the wrong-claim and experiment-only mutants)\n%s", err, out.String())
		}
		text := out.String()
		t.Logf("verify output:\n%s", text)
		for _, want := range []string{
			"ok   01-timeouts clause 1: the starter is pinned in labs/starters.txt: 1 file(s), 1 edited in the working copy",
			"ok   01-timeouts clause 2: the starter compiles and passes go vet",
			"ok   01-timeouts clause 3: every step fails on the starter",
			"ok   01-timeouts clause 4: every starter failure tells its story",
			"ok   01-timeouts clause 5: the solution passes every test (-count=3; the experiment once, without -race)",
			"ok   01-timeouts clause 6: mutant off-by-one is caught by step 1",
			"FAIL 01-timeouts clause 6: mutant wrong-claim is caught by step 2: step 2 passes against the mutant (failing instead: step 1)",
			// The experiment does not run against a mutant: one only it
			// fails is not caught.
			"FAIL 01-timeouts clause 6: mutant experiment-only is caught by step 2: every test passes against the mutant",
			"ok   01-timeouts clause 8: imports no other lab and no solution",
			"ok   01-timeouts clause 9: README.md has the sections in order",
			"ok   01-timeouts clause 9: HINTS.md parses, its steps have tests, its hints go from gentle to explicit, and README.md links to it",
			"ok   clause 10: the running system builds with the pristine starters' learner code (go build -tags learner01 ./cmd/fooddelivery)",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("verify output lacks %q", want)
			}
		}
		if !strings.HasSuffix(text, " passed, 2 failed\n") {
			t.Errorf("verify 01 does not end with two failed checks (the wrong-claim and experiment-only mutants)")
		}
	})
}

// decodeResults decodes a status -json file whole, refusing a field the
// types do not know (internal/class's tests check the shape's invariants).
func decodeResults(t *testing.T, data []byte) class.Results {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r class.Results
	if err := dec.Decode(&r); err != nil || r.Version != 3 {
		t.Fatalf("status -json printed no results.json of version 3 (%v):\n%s", err, data)
	}
	return r
}
