package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/learner"
	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden/ from this run's output")

// goldenVariable matches what differs between two runs of one command on
// the same input: durations and the fixture's temporary paths.
var goldenVariable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m)\b`), "<dur>"},
	{regexp.MustCompile(`[0-9a-f]{40}`), "<commit>"},
	{regexp.MustCompile(`"ran_at": "[^"]*"`), `"ran_at": "<time>"`},
	{regexp.MustCompile(`workshop-verify-[0-9]+`), "workshop-verify-<n>"},
	{regexp.MustCompile(`\b[0-9]{2}:[0-9]{2}:[0-9]{2}\b`), "<clock>"},
}

// normalizeGolden replaces the fixture's root and what varies between
// runs, so that two runs of the same command compare byte for byte.
func normalizeGolden(out, root string) string {
	out = strings.ReplaceAll(out, root, "<root>")
	if resolved, err := filepath.EvalSymlinks(root); err == nil {
		out = strings.ReplaceAll(out, resolved, "<root>")
	}
	out = strings.ReplaceAll(out, os.TempDir(), "<tmp>")
	for _, v := range goldenVariable {
		out = v.re.ReplaceAllString(out, v.with)
	}
	return out
}

// TestOutputsUnchanged runs status, check, hint, watch, gather, mutant and
// verify on the fixture module and compares what each printed with
// testdata/golden/ byte for byte (after normalizeGolden; verify's report
// on stdout, without the progress it writes to stderr): the tool's
// output is part of its contract with learners and instructors, and a
// change to it must be deliberate (go test ./cmd/workshop -run
// TestOutputsUnchanged -update rewrites the files).
func TestOutputsUnchanged(t *testing.T) {
	root := newFixtureRepo(t)
	// The same output on every machine: with or without a C compiler,
	// the race detector is off.
	t.Setenv("CGO_ENABLED", "0")
	// gather's ages are from a fixed now, not from the day the test runs.
	defer func(c func() time.Time) { clock = c }(clock)
	clock = func() time.Time { return time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC) }
	ctx := context.Background()
	cmds := []struct {
		name  string
		args  []string
		stdin string
	}{
		{"status", []string{"-C", root}, ""},
		{"check", []string{"-C", root, "check", "01"}, ""},
		{"hint-1", []string{"-C", root, "hint", "01"}, ""},
		{"hint-2", []string{"-C", root, "hint", "01"}, ""},
		{"hint-3", []string{"-C", root, "hint", "01"}, ""},
		{"mutant-list", []string{"-C", root, "mutant", "01"}, ""},
		{"mutant-show", []string{"-C", root, "mutant", "01", "off-by-one"}, ""},
		{"gather", []string{"gather", filepath.Join("internal", "class", "testdata", "gather")}, ""},
		{"verify", []string{"-C", root, "verify"}, ""},
		{"usage", []string{"frobnicate"}, ""},
	}
	for _, c := range cmds {
		var out, errb bytes.Buffer
		err := run(ctx, append([]string{"workshop"}, c.args...), &out, &errb)
		got := normalizeGolden(out.String(), root)
		if c.name != "verify" { // verify's stderr says how long is left
			got += normalizeGolden(errb.String(), root)
		} else if !strings.Contains(errb.String(), "verify: lab 01-timeouts done in ") {
			t.Errorf("verify's stderr does not say when the lab was done:\n%s", errb.String())
		}
		if err != nil {
			got += "error: " + err.Error() + "\n"
		}
		compareGolden(t, c.name, got)
	}

	// watch --manual: the first run, then quit.
	in, typed := io.Pipe()
	out := &testkit.SyncBuffer{}
	ws := fixtureWorkspace(t, root, in, out)
	done := make(chan error, 1)
	go func() { done <- learner.Watch(ctx, ws, "01", true) }()
	testkit.WaitFor(t, out, "Manual mode:")
	io.WriteString(typed, "quit\n")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watch: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("watch did not return a minute after quit")
	}
	compareGolden(t, "watch", normalizeGolden(out.String(), root))
}

// compareGolden compares got with testdata/golden/name.txt, or writes it
// there with -update.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", "golden", name+".txt")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/workshop -run TestOutputsUnchanged -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s printed other text than %s:\n--- got\n%s\n--- want\n%s", name, file, got, want)
	}
}
