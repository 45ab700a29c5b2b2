package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/learner"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
)

func fixtureWorkspace(t *testing.T, root string, stdin io.Reader, out io.Writer) *repo.Workspace {
	t.Helper()
	ws, err := repo.Open(root, out, out)
	if err != nil {
		t.Fatal(err)
	}
	ws.Stdin = stdin
	return ws
}

const solvedStep1 = "func Budget() int { return 2 }"

func solveStep1(t *testing.T, root string) {
	t.Helper()
	file := filepath.Join(root, "labs", "01-timeouts", "timeouts.go")
	learner := strings.Replace(fixture["labs/01-timeouts/timeouts.go"], "func Budget() int { return 0 }", solvedStep1, 1)
	if err := os.WriteFile(file, []byte(learner), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStatusCache(t *testing.T) {
	root := newFixtureRepo(t)
	ctx := context.Background()
	var out bytes.Buffer
	status := func() string {
		t.Helper()
		out.Reset()
		if err := run(ctx, []string{"workshop", "-C", root}, &out, &out); err != nil {
			t.Fatalf("status: %v\n%s", err, out.String())
		}
		return out.String()
	}
	const line = "Lab 01 timeouts         0 of 2 steps passed (not started"
	if got := status(); !strings.Contains(got, line+")\n") {
		t.Fatalf("first status lacks %q:\n%s", line, got)
	}
	if got := status(); !strings.Contains(got, line+"; unchanged since the last run)") {
		t.Errorf("second status, nothing changed: want the lab from the cache:\n%s", got)
	}
	solveStep1(t, root)
	if got := status(); !strings.Contains(got, "Lab 01 timeouts         1 of 2 steps passed\n") {
		t.Errorf("after an edit the lab must run again:\n%s", got)
	}
	// A lab that does not compile is never stored.
	file := filepath.Join(root, "labs", "01-timeouts", "timeouts.go")
	good, _ := os.ReadFile(file)
	os.WriteFile(file, append(good, "func broken() int { return missing }\n"...), 0o644)
	for range 2 {
		if got := status(); !strings.Contains(got, "does not compile") || strings.Contains(got, "unchanged") {
			t.Errorf("a lab that does not compile: want its errors, never from the cache:\n%s", got)
		}
	}
}

func TestReset(t *testing.T) {
	root := newFixtureRepo(t)
	ctx := context.Background()
	var out bytes.Buffer
	ws := fixtureWorkspace(t, root, strings.NewReader(""), &out)

	if err := learner.Reset(ctx, ws, "01", false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "already the pristine starter: nothing to reset") {
		t.Errorf("reset of a pristine lab:\n%s", out.String())
	}

	// The learner's work: an edited file with CRLF endings and an extra file.
	dir := filepath.Join(root, "labs", "01-timeouts")
	mine := []byte(strings.ReplaceAll(strings.Replace(fixture["labs/01-timeouts/timeouts.go"], "return 0 }", "return 2 }", 1), "\n", "\r\n"))
	extra := []byte("package timeouts\n\nfunc helper() {}\n")
	os.WriteFile(filepath.Join(dir, "timeouts.go"), mine, 0o644)
	os.WriteFile(filepath.Join(dir, "helper.go"), extra, 0o644)

	out.Reset()
	ws = fixtureWorkspace(t, root, strings.NewReader("n\n"), &out)
	if err := learner.Reset(ctx, ws, "01", false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "timeouts.go")); !bytes.Equal(got, mine) || !strings.Contains(out.String(), "Nothing changed.") {
		t.Fatalf("answering n must change nothing:\n%s", out.String())
	}

	out.Reset()
	ws = fixtureWorkspace(t, root, strings.NewReader("y\n"), &out)
	if err := learner.Reset(ctx, ws, "01", false); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if got, _ := os.ReadFile(filepath.Join(dir, "timeouts.go")); string(got) != fixture["labs/01-timeouts/timeouts.go"] {
		t.Errorf("after reset, timeouts.go is %q, want the starter", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "helper.go")); !os.IsNotExist(err) {
		t.Errorf("after reset, helper.go (not in the starter) still exists")
	}
	backups, _ := filepath.Glob(filepath.Join(root, ".workshop", "backups", "01-timeouts-*"))
	if len(backups) != 1 || !strings.Contains(out.String(), backups[0]) {
		t.Fatalf("want one backup directory, named in the output; got %v:\n%s", backups, out.String())
	}
	// The backup restores exactly what was there.
	for name, want := range map[string][]byte{"timeouts.go": mine, "helper.go": extra} {
		if got, err := os.ReadFile(filepath.Join(backups[0], name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("backup of %s: got %q, %v; want the learner's bytes %q", name, got, err, want)
		}
	}
	// The backup is outside every Go package: the lab still builds.
	var status bytes.Buffer
	if err := run(ctx, []string{"workshop", "-C", root, "check", "01"}, &status, &status); !errors.Is(err, repo.ErrFailed) || !strings.Contains(status.String(), "0 of 2 steps passed") {
		t.Errorf("check after reset: %v\n%s", err, status.String())
	}
}

func TestSolutionAsksBeforeThePass(t *testing.T) {
	root := newFixtureRepo(t)
	ctx := context.Background()
	var out bytes.Buffer
	ws := fixtureWorkspace(t, root, strings.NewReader("\n"), &out)
	if err := learner.Solution(ctx, ws, "01", false); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "does not pass yet (0 of 2 steps pass)") || strings.Contains(got, "(reference)") {
		t.Errorf("before the pass, without a yes: want the question and no answer:\n%s", got)
	}
	out.Reset()
	ws = fixtureWorkspace(t, root, strings.NewReader("y\n"), &out)
	if err := learner.Solution(ctx, ws, "01", false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"+++ solutions/01-timeouts/timeouts.go (reference)",
		"-func Budget() int { return 0 }",
		"+func Budget() int { return 2 }",
		"solutions/01-timeouts/NOTES.md",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("solution output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestWatchManual drives watch --manual through pipes: Enter re-runs, and
// quit ends it.
func TestWatchManual(t *testing.T) {
	root := newFixtureRepo(t)
	in, typed := io.Pipe()
	out := &testkit.SyncBuffer{}
	ws := fixtureWorkspace(t, root, in, out)
	done := make(chan error, 1)
	go func() { done <- learner.Watch(context.Background(), ws, "01", true) }()

	testkit.WaitFor(t, out, "0 of 2 steps passed")
	testkit.WaitFor(t, out, "Manual mode: save your changes, then press Enter to re-run.")
	if !strings.Contains(out.String(), "step 1: Give up within the budget") || !strings.Contains(out.String(), "the budget is 0s") {
		t.Errorf("watch must show the first failing step and its story:\n%s", out.String())
	}
	solveStep1(t, root)
	io.WriteString(typed, "\n")
	testkit.WaitFor(t, out, "1 of 2 steps passed")
	io.WriteString(typed, "hint\n")
	testkit.WaitFor(t, out, "The ratio is a constant.")
	io.WriteString(typed, "solution\n")
	testkit.WaitFor(t, out, "Show it anyway? [y/N]")
	io.WriteString(typed, "n\n")
	testkit.WaitFor(t, out, "Nothing shown.")
	io.WriteString(typed, "frobnicate\n")
	testkit.WaitFor(t, out, `Unknown command "frobnicate"`)
	// The lab passes: watch says so, and offers the reference at once.
	file := filepath.Join(root, "labs", "01-timeouts", "timeouts.go")
	solved, _ := os.ReadFile(filepath.Join(root, "solutions", "01-timeouts", "timeouts.go"))
	os.WriteFile(file, solved, 0o644)
	io.WriteString(typed, "\n")
	testkit.WaitFor(t, out, "Lab 01 passes. Well done!")
	testkit.WaitFor(t, out, "Every lab passes: the workshop is done.")
	io.WriteString(typed, "solution\n")
	testkit.WaitFor(t, out, "timeouts.go is the same as the reference.")
	io.WriteString(typed, "quit\n")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watch: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("watch did not return a minute after quit")
	}
}

// TestWatchSeesASave runs watch with file notifications on the fixture and
// saves the lab's file as editors do (write a temporary file, rename it
// over the old one): watch must re-run without being asked.
func TestWatchSeesASave(t *testing.T) {
	root := newFixtureRepo(t)
	in, typed := io.Pipe()
	defer typed.Close()
	out := &testkit.SyncBuffer{}
	ws := fixtureWorkspace(t, root, in, out)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- learner.Watch(ctx, ws, "01", false) }()
	testkit.WaitFor(t, out, "Watching labs/01-timeouts/")

	file := filepath.Join(root, "labs", "01-timeouts", "timeouts.go")
	tmp := file + ".tmp~"
	learner := strings.Replace(fixture["labs/01-timeouts/timeouts.go"], "func Budget() int { return 0 }", solvedStep1, 1)
	if err := os.WriteFile(tmp, []byte(learner), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, out, "1 of 2 steps passed")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watch: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("watch did not return a minute after its context ended")
	}
}

func TestCommandLine(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"status", "-h"}, {"watch", "--help"}, {"reset", "05", "-h"}} {
		var out, errb bytes.Buffer
		if err := run(context.Background(), append([]string{"workshop"}, args...), &out, &errb); err != nil || !strings.Contains(out.String(), "usage: go run ./cmd/workshop") || errb.Len() != 0 {
			t.Errorf("%v: got %v, stdout %q, stderr %q; want the usage on stdout and no error", args, err, out.String(), errb.String())
		}
	}
	for args, want := range map[string]string{
		"frobnicate":   `unknown command "frobnicate"`,
		"check":        "check needs a lab number",
		"reset":        "reset needs a lab number",
		"check 01 02":  "check takes one lab at most",
		"watch -x":     "watch: unknown flag -x",
		"-frobnicate":  "flag provided but not defined: -frobnicate",
		"solution -yy": "solution: unknown flag -yy",
		"gather":       "gather needs the learners' status -json files",
	} {
		err := run(context.Background(), append([]string{"workshop"}, strings.Fields(args)...), io.Discard, io.Discard)
		var u *repo.UsageError
		if !errors.Is(err, repo.ErrUsage) || !errors.As(err, &u) || !strings.Contains(u.Msg, want) {
			t.Errorf("%s: got %v, want a usage error saying %q", args, err, want)
		}
	}
}
