package class

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/testkit"
)

// fixedNow is the clock of the tests: 25 minutes after ben's last pass.
func fixedNow() time.Time { return time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC) }

// TestGatherFixtures gathers testdata/gather: three files directly in it
// (alice, bob, carol) and three learners' directories as a GitHub
// Classroom export has them (resilience-anna/results.json...): anna
// passes no step, ben is stuck at lab 03's step 2 and last passed 25
// minutes ago, cara is done.
func TestGatherFixtures(t *testing.T) {
	csvPath := filepath.Join(t.TempDir(), "class.csv")
	var out, errb bytes.Buffer
	dir := filepath.Join("testdata", "gather")
	// The directory and one of its files again: the file counts once.
	if err := GatherAt(fixedNow, []string{dir, "-csv", csvPath, filepath.Join(dir, "bob.json")}, &out, &errb); err != nil {
		t.Fatalf("gather: %v\nstderr: %s", err, errb.String())
	}
	if errb.Len() != 0 {
		t.Errorf("stderr: %s", errb.String())
	}
	want := [][]string{
		{"learner", "01", "02", "03", "total", "stuck at", "since last pass", "ran at (UTC)"},
		{"alice", "2/2", "2/3", "0/2", "4/7", "02 step 3", "47 min", "2026-05-04T09:12:33Z"},
		{"anna", "0/2", "-", "-", "0/2", "01 step 1", "never", "2026-05-04T09:50:12Z"},
		{"ben", "2/2", "3/3", "1/2", "6/7", "03 step 2", "25 min", "2026-05-04T09:34:52Z"},
		{"bob", "2/2", "build error", "1/2", "3/7", "02 build error", "45 min", "2026-05-04T09:14:02Z"},
		{"cara", "2/2", "3/3", "2/2", "7/7", "done", "2 h 5 min", "2026-05-04T07:54:41Z"},
		{"carol", "1/2", "3/3", "-", "4/5", "01 step 2", "49 min", "2026-05-04T09:10:51Z"},
		{"finished", "4/6", "3/5", "1/4"},
	}
	got := testkit.TableCells(out.String())
	if len(got) != len(want) {
		t.Fatalf("got %d table rows, want %d:\n%s", len(got), len(want), out.String())
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if legend := "Labs: 01 timeouts, 02 deadlines, 03 retries."; !strings.Contains(out.String(), legend) {
		t.Errorf("output lacks the legend %q:\n%s", legend, out.String())
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v", err)
	}
	wantCSV := [][]string{
		{"learner", "01-timeouts", "02-deadlines", "03-retries", "total", "ran_at", "stuck_at", "last_pass_at"},
		{"alice", "2 of 2", "2 of 3", "0 of 2", "4 of 7", "2026-05-04T09:12:33Z", "02 step 3", "2026-05-04T09:12:33Z"},
		{"anna", "0 of 2", "", "", "0 of 2", "2026-05-04T09:50:12Z", "01 step 1", ""},
		{"ben", "2 of 2", "3 of 3", "1 of 2", "6 of 7", "2026-05-04T09:34:52Z", "03 step 2", "2026-05-04T09:35:00Z"},
		{"bob", "2 of 2", "build error", "1 of 2", "3 of 7", "2026-05-04T09:14:02Z", "02 build error", "2026-05-04T09:14:02Z"},
		{"cara", "2 of 2", "3 of 3", "2 of 2", "7 of 7", "2026-05-04T07:54:41Z", "done", "2026-05-04T07:55:00Z"},
		{"carol", "1 of 2", "3 of 3", "", "4 of 5", "2026-05-04T09:10:51Z", "01 step 2", "2026-05-04T09:10:51Z"},
	}
	if len(records) != len(wantCSV) {
		t.Fatalf("got %d CSV records, want %d: %q", len(records), len(wantCSV), records)
	}
	for i := range wantCSV {
		if !slices.Equal(records[i], wantCSV[i]) {
			t.Errorf("CSV record %d: got %q, want %q", i, records[i], wantCSV[i])
		}
	}
}

// With -labs, "stuck at" follows the agenda: on a day of labs 01 and 03,
// alice (02 step 3 open) is stuck at 03 step 1, bob's lab 02 that does
// not compile is skipped, carol, who has no step of lab 03, is stuck at
// her 01 step 2, and cara is done; a -labs that is not lab numbers is a
// usage error.
func TestGatherStuckAtFollowsTheAgenda(t *testing.T) {
	var out, errb bytes.Buffer
	if err := GatherAt(fixedNow, []string{"-labs", "01,03", filepath.Join("testdata", "gather")}, &out, &errb); err != nil {
		t.Fatalf("gather -labs 01,03: %v\nstderr: %s", err, errb.String())
	}
	want := map[string]string{"alice": "03 step 1", "anna": "01 step 1", "ben": "03 step 2", "bob": "03 step 2", "cara": "done", "carol": "01 step 2"}
	for _, row := range testkit.TableCells(out.String()) {
		if w, ok := want[row[0]]; ok {
			if got := row[len(row)-3]; got != w {
				t.Errorf("%s is stuck at %q with -labs 01,03, want %q: %q", row[0], got, w, row)
			}
			delete(want, row[0])
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v\n%s", want, out.String())
	}
	for _, bad := range []string{"1,x", "0", "01,01", "100", ","} {
		var u *repo.UsageError
		if err := GatherAt(fixedNow, []string{"-labs", bad, filepath.Join("testdata", "gather")}, &out, &errb); !errors.As(err, &u) {
			t.Errorf("gather -labs %q: %v, want a usage error", bad, err)
		}
	}
}

func TestGatherDuplicateLearners(t *testing.T) {
	dir := t.TempDir()
	alice, err := os.ReadFile(filepath.Join("testdata", "gather", "alice.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Two machines where everyone is "student", and a file without a
	// learner field, named by its file name.
	student := bytes.Replace(alice, []byte(`"learner": "alice"`), []byte(`"learner": "student"`), 1)
	anonymous := bytes.Replace(alice, []byte(`"learner": "alice",`), nil, 1)
	for name, data := range map[string][]byte{"pc1/results.json": student, "pc2/results.json": student, "dan.json": anonymous} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	pc1, pc2 := filepath.Join(dir, "pc1", "results.json"), filepath.Join(dir, "pc2", "results.json")
	if err := Gather([]string{pc2, pc1, filepath.Join(dir, "dan.json")}, &out, &errb); err != nil {
		t.Fatalf("gather: %v\n%s", err, errb.String())
	}
	var names []string
	for _, row := range testkit.TableCells(out.String())[1:] {
		names = append(names, row[0])
	}
	want := []string{"dan", "student (" + pc1 + ")", "student (" + pc2 + ")", "finished"}
	if !slices.Equal(names, want) {
		t.Errorf("rows: got %q, want %q", names, want)
	}
	if note := `several files name the learner "student"`; !strings.Contains(errb.String(), note) {
		t.Errorf("stderr lacks %q: %s", note, errb.String())
	}
}

func TestGatherBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join("testdata", "gather", "carol.json")
	for _, tc := range []struct {
		name, content, want string
	}{
		{"text.json", "results: pass\n", "not a results.json of version 3, as status -json writes: not JSON: invalid character"},
		{"array.json", `[{"version": 3}]`, "a JSON array, not an object"},
		{"null.json", `null`, "null, not an object"},
		{"noversion.json", `{"status": "pass", "tests": []}`, `no "version" field`},
		{"v2.json", `{"version": 2, "status": "pass", "tests": []}`, "version 2: gather reads version 3"},
		{"status.json", `{"version": 3, "status": "passed", "tests": []}`, `status "passed": want pass, fail or error`},
		{"notests.json", `{"version": 3, "status": "fail"}`, `status fail without a "tests" array`},
		{"teststype.json", `{"version": 3, "status": "fail", "tests": "all of them"}`, `field "tests" holds a JSON string, want an array`},
		{"version.json", `{"version": "3", "status": "pass", "tests": []}`, `field "version" holds a JSON string, want a number`},
		{"noname.json", `{"version": 3, "status": "pass", "tests": [{"status": "pass", "task_id": 1}]}`, "tests[0] has no name"},
		{"teststatus.json", `{"version": 3, "status": "pass", "tests": [{"name": "a", "status": "ok", "task_id": 1}]}`, `tests[0] ("a"): status "ok"`},
		{"notask.json", `{"version": 3, "status": "pass", "tests": [{"name": "a", "status": "pass"}]}`, `tests[0] ("a"): no task_id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			err := Gather([]string{good, p}, &out, &errb)
			if !errors.Is(err, repo.ErrFailed) {
				t.Errorf("got %v, want errFailed", err)
			}
			if want := "gather: " + p + ": "; !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q lacks %q and %q", errb.String(), want, tc.want)
			}
			// The good file is still in the table.
			if !strings.Contains(out.String(), "carol ") {
				t.Errorf("the table lacks the good file's learner:\n%s", out.String())
			}
		})
	}

	t.Run("missing file and empty directory", func(t *testing.T) {
		empty := t.TempDir()
		var out, errb bytes.Buffer
		err := Gather([]string{filepath.Join(dir, "absent.json"), empty}, &out, &errb)
		if !errors.Is(err, repo.ErrFailed) || out.Len() != 0 {
			t.Errorf("got %v and output %q, want errFailed and no table", err, out.String())
		}
		for _, want := range []string{filepath.Join(dir, "absent.json"), empty + ": a directory without .json files"} {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("stderr %q lacks %q", errb.String(), want)
			}
		}
	})

	t.Run("usage", func(t *testing.T) {
		var out bytes.Buffer
		for _, args := range [][]string{nil, {"-csv"}, {"-xml", good}} {
			if err := Gather(args, &out, &out); !errors.Is(err, repo.ErrUsage) {
				t.Errorf("gather %q: got %v, want errUsage", args, err)
			}
		}
	})
}

// TestGatherDistrustsItsInput: a learner's file is input an instructor's
// spreadsheet and terminal must survive.
func TestGatherDistrustsItsInput(t *testing.T) {
	dir := t.TempDir()
	base, err := os.ReadFile(filepath.Join("testdata", "gather", "alice.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	named := func(learner string) []byte {
		quoted, _ := json.Marshal(learner)
		return bytes.Replace(base, []byte(`"learner": "alice"`), append([]byte(`"learner": `), quoted...), 1)
	}
	write("formula.json", named(`=HYPERLINK("http://evil.example/","open")`))
	write("escape.json", named("\x1b[2J\x1b[31mmallory\nbob\t9/9"))
	// Windows PowerShell 5.1's > writes UTF-16LE with a byte-order mark.
	utf16le := []byte{0xFF, 0xFE}
	for _, r := range string(named("winnie")) {
		utf16le = append(utf16le, byte(r), byte(r>>8))
	}
	write("winnie.json", utf16le)
	write("bom.json", append([]byte{0xEF, 0xBB, 0xBF}, named("bomber")...))

	csvPath := filepath.Join(t.TempDir(), "class.csv")
	var out, errb bytes.Buffer
	if err := Gather([]string{dir, "-csv", csvPath}, &out, &errb); err != nil {
		t.Fatalf("gather: %v\nstderr: %s", err, errb.String())
	}
	text := out.String()
	if strings.ContainsAny(text, "\x1b") || strings.Contains(text, "\nbob") {
		t.Errorf("control characters from a learner name reached the table:\n%q", text)
	}
	for _, want := range []string{"winnie", "bomber", "mallory bob 9/9"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	f, _ := os.Open(csvPath)
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range records {
		for _, cell := range rec {
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				t.Errorf("CSV cell %q would be read as a formula", cell)
			}
		}
	}
}
