package class

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
)

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-72 * time.Hour:                 "just now", // a learner's clock ahead of this one
		-time.Second:                    "just now",
		0:                               "just now",
		59 * time.Second:                "just now",
		time.Minute:                     "1 min",
		12*time.Minute + 59*time.Second: "12 min",
		time.Hour:                       "1 h",
		2*time.Hour + 5*time.Minute:     "2 h 5 min",
		23*time.Hour + 59*time.Minute:   "23 h 59 min",
		24 * time.Hour:                  "1 d",
		3*24*time.Hour + 23*time.Hour:   "3 d",
	} {
		if got := age(d); got != want {
			t.Errorf("age(%v) = %q, want %q", d, got, want)
		}
	}
}

// writeResults writes a results.json of one learner at dir/name.
func writeResults(t *testing.T, dir, name, learner, tests string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	field := ""
	if learner != "" {
		field = `"learner": "` + learner + `", `
	}
	body := `{"version": 3, "status": "fail", ` + field + `"tests": [` + tests + `]}`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	passAt = `{"name": "s1", "status": "pass", "task_id": 1, "lab": "01-timeouts", "step": 1, "ran_at": "%s"}`
	fails  = `{"name": "s2", "status": "fail", "task_id": 1, "lab": "01-timeouts", "step": 2}`
)

func TestGatherFutureLastPass(t *testing.T) {
	dir := t.TempDir()
	// The learner's clock is an hour ahead of the instructor's.
	writeResults(t, dir, "skew.json", "skew", strings.Replace(passAt, "%s", "2026-05-04T11:00:00Z", 1)+", "+fails)
	var out, errb bytes.Buffer
	if err := GatherAt(fixedNow, []string{dir}, &out, &errb); err != nil {
		t.Fatalf("gather: %v\n%s", err, errb.String())
	}
	row := testkit.TableCells(out.String())[1]
	if want := []string{"skew", "1/2", "1/2", "01 step 2", "just now"}; !slices.Equal(row, want) {
		t.Errorf("row: got %q, want %q", row, want)
	}
	if strings.Contains(out.String(), "-1") {
		t.Errorf("a negative age reached the table:\n%s", out.String())
	}
}

func TestGatherClassroomExport(t *testing.T) {
	export := t.TempDir()
	pass := strings.Replace(passAt, "%s", "2026-05-04T09:00:00Z", 1)
	// No learner field: the row is named by the directory.
	writeResults(t, export, "assignment-amy/results.json", "", pass+", "+fails)
	// Any .json one level down, named by its learner field.
	writeResults(t, export, "assignment-carl/carl.json", "carl", pass)
	// A file directly in the export counts too.
	writeResults(t, export, "dora.json", "dora", fails)
	// Not read: deeper than one level, in a dot-directory, not .json.
	writeResults(t, export, "assignment-deep/labs/results.json", "deep", pass)
	writeResults(t, export, ".git/results.json", "git", pass)
	os.WriteFile(filepath.Join(export, "roster.csv"), []byte("amy,carl\n"), 0o644)
	os.MkdirAll(filepath.Join(export, "assignment-bo"), 0o755)
	os.WriteFile(filepath.Join(export, "assignment-bo", "README.md"), []byte("# starter\n"), 0o644)

	var out, errb bytes.Buffer
	if err := GatherAt(fixedNow, []string{export}, &out, &errb); err != nil {
		t.Fatalf("gather: %v, want nil: a learner without a file is a note\n%s", err, errb.String())
	}
	var names []string
	for _, row := range testkit.TableCells(out.String())[1:] {
		names = append(names, row[0])
	}
	if want := []string{"assignment-amy", "carl", "dora", "finished"}; !slices.Equal(names, want) {
		t.Errorf("rows: got %q, want %q\n%s", names, want, out.String())
	}
	for _, sub := range []string{"assignment-bo", "assignment-deep"} {
		if note := filepath.Join(export, sub) + ": no .json file in it, skipped"; !strings.Contains(errb.String(), note) {
			t.Errorf("stderr lacks %q:\n%s", note, errb.String())
		}
	}
	if strings.Contains(errb.String(), ".git") || strings.Contains(errb.String(), "roster") {
		t.Errorf("stderr names a file or directory gather should ignore:\n%s", errb.String())
	}
}

// TestCSVGuardsTheNewColumns: whatever a row holds, no CSV cell, stuck_at
// and last_pass_at included, begins with what a spreadsheet runs.
func TestCSVGuardsTheNewColumns(t *testing.T) {
	for _, evil := range []string{"=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"} {
		r := &learnerRow{name: evil, learner: evil, ranAt: evil, stuck: evil, passes: true,
			lastPass: time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC), labs: map[int]*labCell{1: {steps: 1}}}
		var buf bytes.Buffer
		if err := newClassTable([]*learnerRow{r}).writeCSV(&buf); err != nil {
			t.Fatal(err)
		}
		records, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		head, row := records[0], records[1]
		for i, cell := range row {
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				t.Errorf("%q: column %s holds %q, which a spreadsheet would run", evil, head[i], cell)
			}
		}
		if i := slices.Index(head, "stuck_at"); i < 0 || row[i] != "'"+evil {
			t.Errorf("%q: stuck_at is not the guarded text: %q", evil, row)
		}
	}
}

// TestGatherRefusesABadStepTime: a test's ran_at that is not RFC 3339 is
// named, as the file's own is.
func TestGatherRefusesABadStepTime(t *testing.T) {
	p := writeResults(t, t.TempDir(), "x.json", "x", strings.Replace(passAt, "%s", "yesterday", 1))
	var out, errb bytes.Buffer
	if err := GatherAt(fixedNow, []string{p}, &out, &errb); err == nil || !strings.Contains(errb.String(), `tests[0] ("s1"): ran_at "yesterday" is not an RFC 3339 time`) {
		t.Errorf("got %v, stderr %q; want the step's ran_at refused", err, errb.String())
	}
}
