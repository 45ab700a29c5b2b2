package class

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// DecodeClassResults decodes data as the documented shape, rejecting any
// field the types do not document, and checks the shape's invariants: version
// 3, the statuses, the task_id range (from 1 to maxTask), the timestamps, and
// that the top-level status follows from the tests.
func DecodeClassResults(t *testing.T, data []byte, maxTask int) Results {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Results
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("the JSON does not decode as classResults: %v\n%s", err, data)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("more than one JSON value: %v", err)
	}
	if r.Version != 3 {
		t.Errorf("version %d, want 3", r.Version)
	}
	if r.Tests == nil {
		t.Errorf("no tests array")
	}
	validStatus := map[string]bool{ResultPass: true, ResultFail: true, ResultError: true}
	if !validStatus[r.Status] {
		t.Errorf("top-level status %q, want pass, fail or error", r.Status)
	}
	checkTime := func(what, s string) {
		if s == "" {
			return
		}
		at, err := time.Parse(time.RFC3339, s)
		if err != nil || at.Location() != time.UTC || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s: ran_at %q is not RFC 3339 in UTC", what, s)
		}
	}
	checkTime("top level", r.RanAt)
	counts := map[string]int{}
	seen := map[string]bool{}
	for i, test := range r.Tests {
		what := fmt.Sprintf("test %d (%s)", i, test.Name)
		counts[test.Status]++
		if !validStatus[test.Status] {
			t.Errorf("%s: status %q, want pass, fail or error", what, test.Status)
		}
		if test.TaskID < 1 || test.TaskID > maxTask {
			t.Errorf("%s: task_id %d, want 1..%d", what, test.TaskID, maxTask)
		}
		if want := fmt.Sprintf("Lab %02d ", test.TaskID); !strings.HasPrefix(test.Name, want) || !strings.HasPrefix(test.Lab, want[4:6]+"-") {
			t.Errorf("%s: name or lab %q does not match task_id %d", what, test.Lab, test.TaskID)
		}
		if !strings.Contains(test.Name, fmt.Sprintf(", step %d", test.Step)) {
			t.Errorf("%s: name does not name step %d", what, test.Step)
		}
		key := fmt.Sprintf("%s/%d", test.Lab, test.Step)
		if seen[key] {
			t.Errorf("%s: a second test for lab %s step %d", what, test.Lab, test.Step)
		}
		seen[key] = true
		if (test.Status == ResultPass) != (test.Message == "") {
			t.Errorf("%s: status %s with message %q: want a message exactly when the step does not pass", what, test.Status, test.Message)
		}
		checkTime(what, test.RanAt)
	}
	want := ResultFail
	switch {
	case len(r.Tests) == 0 || counts[ResultError] == len(r.Tests):
		want = ResultError
	case counts[ResultPass] == len(r.Tests):
		want = ResultPass
	}
	if r.Status != want {
		t.Errorf("top-level status %q, want %q for %v", r.Status, want, counts)
	}
	if (r.Status == ResultError) != (r.Message != "") {
		t.Errorf("top-level status %s with message %q: want a message exactly with error", r.Status, r.Message)
	}
	return r
}

// classStream is a go test -json run of three labs of module example.com/w:
// 01 with a passing and a failing step, 02 that does not build, 03 whose
// experiment crashed the test binary.
const classStream = `{"Time":"2026-05-04T11:12:40.5+02:00","Action":"start","Package":"example.com/w/labs/01-timeouts"}
{"Time":"2026-05-04T11:12:41.1+02:00","Action":"run","Package":"example.com/w/labs/01-timeouts","Test":"TestStep1A"}
{"Time":"2026-05-04T11:12:41.2+02:00","Action":"pass","Package":"example.com/w/labs/01-timeouts","Test":"TestStep1A","Elapsed":0}
{"Time":"2026-05-04T11:12:41.3+02:00","Action":"run","Package":"example.com/w/labs/01-timeouts","Test":"TestStep1B"}
{"Time":"2026-05-04T11:12:42.9+02:00","Action":"pass","Package":"example.com/w/labs/01-timeouts","Test":"TestStep1B","Elapsed":0}
{"Time":"2026-05-04T11:12:43.0+02:00","Action":"run","Package":"example.com/w/labs/01-timeouts","Test":"TestStep2Experiment"}
{"Time":"2026-05-04T11:12:43.1+02:00","Action":"output","Package":"example.com/w/labs/01-timeouts","Test":"TestStep2Experiment","Output":"=== RUN   TestStep2Experiment\n"}
{"Time":"2026-05-04T11:12:43.2+02:00","Action":"output","Package":"example.com/w/labs/01-timeouts","Test":"TestStep2Experiment","Output":"    x_test.go:9: ratio 0, want 5: see step 2\n"}
{"Time":"2026-05-04T11:12:44.0+02:00","Action":"output","Package":"example.com/w/labs/01-timeouts","Test":"TestStep2Experiment","Output":"--- FAIL: TestStep2Experiment (1.00s)\n"}
{"Time":"2026-05-04T11:12:44.0+02:00","Action":"fail","Package":"example.com/w/labs/01-timeouts","Test":"TestStep2Experiment","Elapsed":1}
{"Time":"2026-05-04T11:12:44.1+02:00","Action":"fail","Package":"example.com/w/labs/01-timeouts","Elapsed":3.6}
{"ImportPath":"example.com/w/labs/02-deadlines [example.com/w/labs/02-deadlines.test]","Action":"build-output","Output":"# example.com/w/labs/02-deadlines [example.com/w/labs/02-deadlines.test]\n"}
{"ImportPath":"example.com/w/labs/02-deadlines [example.com/w/labs/02-deadlines.test]","Action":"build-output","Output":"labs/02-deadlines/deadlines.go:7:9: undefined: missing\n"}
{"ImportPath":"example.com/w/labs/02-deadlines [example.com/w/labs/02-deadlines.test]","Action":"build-fail"}
{"Time":"2026-05-04T09:12:39Z","Action":"start","Package":"example.com/w/labs/02-deadlines"}
{"Time":"2026-05-04T09:12:39.5Z","Action":"fail","Package":"example.com/w/labs/02-deadlines","Elapsed":0,"FailedBuild":"example.com/w/labs/02-deadlines [example.com/w/labs/02-deadlines.test]"}
{"Time":"2026-05-04T09:12:45Z","Action":"run","Package":"example.com/w/labs/03-retries","Test":"TestStep1A"}
{"Time":"2026-05-04T09:12:46Z","Action":"pass","Package":"example.com/w/labs/03-retries","Test":"TestStep1A","Elapsed":0}
{"Time":"2026-05-04T09:12:47Z","Action":"run","Package":"example.com/w/labs/03-retries","Test":"TestStep2Experiment"}
{"Time":"2026-05-04T09:12:47Z","Action":"output","Package":"example.com/w/labs/03-retries","Test":"TestStep2Experiment","Output":"panic: boom\n"}
{"Time":"2026-05-04T09:12:48Z","Action":"fail","Package":"example.com/w/labs/03-retries","Elapsed":3}
`

func classInfo(name string, tests []string, titles map[int]string) lab.Info {
	info := lab.Info{Lab: lab.Lab{Name: name, Present: true}, Tests: lab.TestSource{Tests: tests}, Readme: lab.Readme{Steps: titles}}
	seen := map[int]bool{}
	for _, t := range tests {
		seen[lab.StepOf(t)] = true
	}
	for n := range titles {
		seen[n] = true
	}
	for n := 1; len(seen) > 0; n++ {
		if seen[n] {
			info.Steps = append(info.Steps, n)
			delete(seen, n)
		}
	}
	return info
}

func TestClassResultsShape(t *testing.T) {
	ws := &repo.Workspace{Module: "example.com/w"}
	run := gotest.Parse(strings.NewReader(classStream))
	infos := []lab.Info{
		classInfo("01-timeouts", []string{"TestStep1A", "TestStep1B", "TestStep2Experiment"},
			map[int]string{1: "Give up within the budget", 2: "Run the experiment", 3: "Only in the README"}),
		classInfo("02-deadlines", []string{"TestStep1A", "TestStep2Experiment"}, nil),
		classInfo("03-retries", []string{"TestStep1A", "TestStep2Experiment"}, map[int]string{1: "Retry", 2: "Experiment"}),
	}
	var outcomes []lab.Outcome
	for _, info := range infos {
		outcomes = append(outcomes, lab.OutcomeOf(ws, info, run, repo.Result{}))
	}
	r := ResultsOf(ws, outcomes, parseEventTimes([]byte(classStream)))
	r.Learner, r.Commit, r.RanAt = "alice", "0123abcd", "2026-05-04T09:12:30Z"
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := DecodeClassResults(t, data, 9)
	if got.Status != ResultFail || got.Message != "" {
		t.Errorf("top level: status %q message %q, want fail without a message", got.Status, got.Message)
	}
	if got.Learner != "alice" || got.Commit != "0123abcd" || got.RanAt != "2026-05-04T09:12:30Z" {
		t.Errorf("extensions: got %q %q %q", got.Learner, got.Commit, got.RanAt)
	}
	type row struct {
		name, status, message, ranAt, testCode string
		task                                   int
	}
	want := []row{
		{"Lab 01 timeouts, step 1: Give up within the budget", "pass", "", "2026-05-04T09:12:42Z", "go test -run '^(TestStep1A|TestStep1B)$' ./labs/01-timeouts/", 1},
		{"Lab 01 timeouts, step 2: Run the experiment", "fail", "TestStep2Experiment failed:\nx_test.go:9: ratio 0, want 5: see step 2", "2026-05-04T09:12:44Z", "go test -run '^(TestStep2Experiment)$' ./labs/01-timeouts/", 1},
		{"Lab 01 timeouts, step 3: Only in the README", "fail", "the README describes this step but no TestStep3 test exists", "", "", 1},
		{"Lab 02 deadlines, step 1", "error", "# example.com/w/labs/02-deadlines [example.com/w/labs/02-deadlines.test]\nlabs/02-deadlines/deadlines.go:7:9: undefined: missing", "2026-05-04T09:12:39Z", "go test -run '^(TestStep1A)$' ./labs/02-deadlines/", 2},
		{"Lab 02 deadlines, step 2", "error", "# example.com/w/labs/02-deadlines [example.com/w/labs/02-deadlines.test]\nlabs/02-deadlines/deadlines.go:7:9: undefined: missing", "2026-05-04T09:12:39Z", "go test -run '^(TestStep2Experiment)$' ./labs/02-deadlines/", 2},
		{"Lab 03 retries, step 1: Retry", "pass", "", "2026-05-04T09:12:46Z", "go test -run '^(TestStep1A)$' ./labs/03-retries/", 3},
		{"Lab 03 retries, step 2: Experiment", "fail", "did not run or did not finish: TestStep2Experiment (an earlier test may have crashed the test binary)", "", "go test -run '^(TestStep2Experiment)$' ./labs/03-retries/", 3},
	}
	if len(got.Tests) != len(want) {
		t.Fatalf("got %d tests, want %d (one per step):\n%s", len(got.Tests), len(want), data)
	}
	for i, w := range want {
		g := got.Tests[i]
		if (row{g.Name, g.Status, g.Message, g.RanAt, g.TestCode, g.TaskID}) != w {
			t.Errorf("test %d:\n got %+v\nwant %+v", i, row{g.Name, g.Status, g.Message, g.RanAt, g.TestCode, g.TaskID}, w)
		}
	}

	// Every lab broken: the top-level status is error and says why.
	broken := ResultsOf(ws, outcomes[1:2], nil)
	data, _ = json.Marshal(broken)
	if got := DecodeClassResults(t, data, 9); got.Status != ResultError || !strings.Contains(got.Message, "lab 02-deadlines does not compile:\n") || !strings.Contains(got.Message, "undefined: missing") {
		t.Errorf("every lab broken: got status %q message %q, want error with the compile errors", got.Status, got.Message)
	}
	// No lab at all: error, with an empty tests array (not null).
	data, _ = json.Marshal(ResultsOf(ws, nil, nil))
	if got := DecodeClassResults(t, data, 9); got.Status != ResultError || !bytes.Contains(data, []byte(`"tests":[]`)) {
		t.Errorf("no lab: got %s, want status error and an empty tests array", data)
	}
}

// TestClassResultsOfTheLabs maps this repository's nine labs, every test
// passing, without running them: one test per step of each lab, task_id the
// lab number, and every step named with its README title.
func TestClassResultsOfTheLabs(t *testing.T) {
	ws, err := repo.Open(".", io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	labs, err := lab.List(ws)
	if err != nil {
		t.Fatal(err)
	}
	run := &gotest.Run{Packages: map[string]*gotest.Package{}}
	var outcomes []lab.Outcome
	steps := 0
	for _, l := range labs {
		if !l.Present {
			continue
		}
		info, err := lab.ReadInfo(ws, l)
		if err != nil {
			t.Fatal(err)
		}
		pkg := run.Pkg(ws.Module + "/" + info.Dir())
		pkg.Action = "pass"
		for _, name := range info.Tests.Tests {
			pkg.Tests[name] = &gotest.Test{Name: name, Action: "pass"}
		}
		outcomes = append(outcomes, lab.OutcomeOf(ws, info, run, repo.Result{}))
		steps += len(info.Steps)
	}
	if len(outcomes) != len(lab.Known) {
		t.Fatalf("%d labs present, want the %d known labs", len(outcomes), len(lab.Known))
	}
	data, err := json.Marshal(ResultsOf(ws, outcomes, nil))
	if err != nil {
		t.Fatal(err)
	}
	r := DecodeClassResults(t, data, len(lab.Known))
	if r.Status != ResultPass || len(r.Tests) != steps {
		t.Errorf("got status %q and %d tests, want pass and %d (one per step)", r.Status, len(r.Tests), steps)
	}
	perLab := map[int]int{}
	for _, test := range r.Tests {
		perLab[test.TaskID]++
		if test.Step != perLab[test.TaskID] {
			t.Errorf("%s: step %d, want %d (steps in order from 1)", test.Name, test.Step, perLab[test.TaskID])
		}
		if strings.HasSuffix(test.Name, fmt.Sprintf("step %d", test.Step)) {
			t.Errorf("%s: no title from the lab's README", test.Name)
		}
	}
	if len(perLab) != len(lab.Known) {
		t.Errorf("tests for %d labs, want %d: %v", len(perLab), len(lab.Known), perLab)
	}
}

func TestParseStatusFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		json    bool
		name    string
		wantErr bool
	}{
		{nil, false, osUserName(), false},
		{[]string{"-json"}, true, osUserName(), false},
		{[]string{"-json", "-name", " bob "}, true, "bob", false},
		{[]string{"-name", "bob", "-json"}, true, "bob", false},
		{[]string{"-name", "bob"}, false, "", true},
		{[]string{"-json", "extra"}, false, "", true},
		{[]string{"-xml"}, false, "", true},
	} {
		opts, err := ParseStatusFlags(tc.args)
		if tc.wantErr {
			if !errors.Is(err, repo.ErrUsage) {
				t.Errorf("%q: got %v, want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil || opts.Json != tc.json || opts.Name != tc.name {
			t.Errorf("%q: got %+v, %v; want json=%v name=%q", tc.args, opts, err, tc.json, tc.name)
		}
	}
}
