package class

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/labrun"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/term"
)

// Results is what `status -json` prints: one learner's progress as a
// results.json file of Exercism's test-runner interface, version 3
// (https://exercism.org/docs/building/tooling/test-runners/interface), so
// that tools which read that format read this one, and `gather` merges many
// of them into a class table.
//
// The Exercism fields:
//
//   - version: always 3.
//   - status: "pass" when every step of every lab passes; "error" when no
//     step could run (every lab there is does not compile, or no lab has a
//     step); "fail" otherwise.
//   - message: only with status "error": what went wrong (the first compile
//     errors of each lab); omitted otherwise.
//   - tests: one entry per lab step (not per Go test), labs in order, then
//     steps in order (the order of the labs' tests files), see Test.
//
// The extensions, fields Exercism does not define (its readers ignore them):
//
//   - learner: who ran it: the -name flag, by default the OS user name.
//   - commit: the repository's HEAD commit (git rev-parse HEAD); omitted
//     without git or outside a git checkout.
//   - ran_at: when the run started, RFC 3339 in UTC ("2026-05-04T09:12:33Z").
//   - scores: by lab directory name, the score its experiment printed on
//     its score card (lab 10, the game day): yours, starter and
//     reference, each 0-100, and the seed they were played on; omitted
//     when no lab printed one (see lab.Score).
//
// Example (one lab shown; a real file has every lab present in labs/):
//
//	{
//	  "version": 3,
//	  "status": "fail",
//	  "tests": [
//	    {
//	      "name": "Lab 01 timeouts, step 1: Give up within the budget",
//	      "status": "pass",
//	      "test_code": "go test -run '^(TestStep1Budget)$' ./labs/01-timeouts/",
//	      "task_id": 1,
//	      "lab": "01-timeouts",
//	      "step": 1,
//	      "ran_at": "2026-05-04T09:12:41Z"
//	    },
//	    {
//	      "name": "Lab 01 timeouts, step 2: Run the experiment",
//	      "status": "fail",
//	      "message": "TestStep2Experiment failed:\nratio 0, want 5: see step 2",
//	      "test_code": "go test -run '^(TestStep2Experiment)$' ./labs/01-timeouts/",
//	      "task_id": 1,
//	      "lab": "01-timeouts",
//	      "step": 2,
//	      "ran_at": "2026-05-04T09:12:41Z"
//	    }
//	  ],
//	  "learner": "alice",
//	  "commit": "4f0c2d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e",
//	  "ran_at": "2026-05-04T09:12:33Z"
//	}
type Results struct {
	Version int    `json:"version"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	Tests   []Test `json:"tests"`

	// Extensions.
	Learner string               `json:"learner,omitempty"`
	Commit  string               `json:"commit,omitempty"`
	RanAt   string               `json:"ran_at,omitempty"`
	Scores  map[string]lab.Score `json:"scores,omitempty"`
}

// Test is one lab step in Results.
//
// The Exercism fields:
//
//   - name: "Lab 05 breaker, step 3: <the step's title in the lab's README>".
//   - status: "pass" when every test of the step passed; "error" when the
//     lab does not compile (every step of that lab is "error"); "fail"
//     otherwise: a test failed, or did not run or finish (an earlier test
//     crashed the test binary), or the README describes a step no test checks.
//   - message: for "fail", the first failing test's story (its name and the
//     first lines it wrote) or why the step did not run; for "error", the
//     first compile errors; omitted for "pass".
//   - output: never set: go test does not separate what the learner's code
//     printed from what the tests wrote, and all of it is in message.
//   - test_code: the command that runs the step's tests (Exercism puts the
//     test's code here; a step has several tests, and the learner has them
//     in the lab's _test.go files).
//   - task_id: the lab's number (1 for 01-timeouts, ... 9 for 09-hedging): a
//     lab is the task its steps belong to.
//
// The extensions:
//
//   - lab: the lab's directory name, "05-breaker".
//   - step: the step number, from 1.
//   - ran_at: when the step's last test finished (for "error", when the
//     build failed), RFC 3339 in UTC, from the go test -json event times (a
//     result go test replays from its cache, which is keyed on the code,
//     counts as run then); omitted when none of its tests ran.
type Test struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Message  string `json:"message,omitempty"`
	Output   string `json:"output,omitempty"`
	TestCode string `json:"test_code,omitempty"`
	TaskID   int    `json:"task_id"`

	// Extensions.
	Lab   string `json:"lab,omitempty"`
	Step  int    `json:"step,omitempty"`
	RanAt string `json:"ran_at,omitempty"`
}

// The statuses of the Exercism interface, top-level and per test.
const (
	ResultPass  = "pass"
	ResultFail  = "fail"
	ResultError = "error"
)

// StatusOptions are the flags of the status command.
type StatusOptions struct {
	Json bool
	Name string
}

// ParseStatusFlags reads status's flags: -json, and -name (only with -json).
func ParseStatusFlags(args []string) (StatusOptions, error) {
	var opts StatusOptions
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&opts.Json, "json", false, "print the results as JSON")
	name := fs.String("name", "", "the learner's `name` in the JSON")
	if err := fs.Parse(args); err != nil {
		return opts, repo.BadUsage("status: %v", err)
	}
	if fs.NArg() != 0 {
		return opts, repo.BadUsage("status takes no lab number (got %q): check NN shows one lab", strings.Join(fs.Args(), " "))
	}
	if *name != "" && !opts.Json {
		return opts, repo.BadUsage("status: -name goes with -json")
	}
	opts.Name = strings.TrimSpace(*name)
	if opts.Name == "" {
		opts.Name = osUserName()
	}
	return opts, nil
}

// osUserName returns the name of the user running the tool, without a
// Windows domain, or "unknown".
func osUserName() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = os.Getenv("USERNAME")
	}
	if i := strings.LastIndex(name, `\`); i >= 0 {
		name = name[i+1:]
	}
	if name = strings.TrimSpace(name); name == "" {
		return "unknown"
	}
	return name
}

// StatusJSON runs every present lab's tests, as status does, and prints the
// results as Results on stdout. Failing steps are the answer, not an
// error: it returns an error only when the repository cannot be read.
func StatusJSON(ctx context.Context, ws *repo.Workspace, learner string) error {
	_, infos, err := labrun.Present(ws)
	if err != nil {
		return err
	}
	started := time.Now()
	// stdout is the JSON alone; the progress line, if any, goes to stderr.
	// Labs unchanged since their last run come from the status cache, with
	// the times of that run: when each step last ran.
	byName, err := labrun.Run(ctx, ws, infos, term.New(ws.Stderr), func(io.Writer, lab.Outcome, bool) {})
	if err != nil {
		return err
	}
	var outcomes []lab.Outcome
	var events []byte
	for _, info := range infos {
		o := byName[info.Name]
		outcomes = append(outcomes, o)
		events = append(events, o.Events...)
	}
	times := parseEventTimes(events)
	r := ResultsOf(ws, outcomes, times)
	r.Learner = learner
	r.RanAt = rfc3339UTC(started)
	if res := ws.Git(ctx, "rev-parse", "HEAD"); res.Err == nil {
		r.Commit = strings.TrimSpace(string(res.Stdout))
	}
	enc := json.NewEncoder(ws.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// ResultsOf maps lab outcomes to Results, without the top-level
// extensions (learner, commit, ran_at).
func ResultsOf(ws *repo.Workspace, outcomes []lab.Outcome, times EventTimes) Results {
	r := Results{Version: 3, Tests: []Test{}}
	var broken []string // the compile errors of each lab that does not build
	counts := map[string]int{}
	for _, o := range outcomes {
		info := o.Info
		pkg := path.Join(ws.Module, info.Dir())
		taskID, _ := strconv.Atoi(info.Num())
		var compileMsg string
		if o.CompileErrs != nil {
			compileMsg = strings.Join(repo.FirstLines(o.CompileErrs, 8), "\n")
			broken = append(broken, fmt.Sprintf("lab %s does not compile:\n%s", info.Name, compileMsg))
		}
		if sc, ok := o.Score(); ok {
			if r.Scores == nil {
				r.Scores = map[string]lab.Score{}
			}
			r.Scores[info.Name] = sc
		}
		for _, s := range o.Steps {
			t := Test{
				Name:     fmt.Sprintf("Lab %s %s, %s", info.Num(), info.Title(), info.StepTitle(s.N)),
				TaskID:   taskID,
				Lab:      info.Name,
				Step:     s.N,
				TestCode: stepCommand(info, s),
			}
			switch {
			case o.CompileErrs != nil:
				t.Status = ResultError
				t.Message = compileMsg
				t.RanAt = times.at(pkg, "")
			case s.State == lab.StepPassed:
				t.Status = ResultPass
			case s.State == lab.StepFailing:
				t.Status = ResultFail
				t.Message = failureStory(s)
			case s.State == lab.StepNotRun:
				t.Status = ResultFail
				t.Message = fmt.Sprintf("did not run or did not finish: %s (an earlier test may have crashed the test binary)",
					strings.Join(s.NotRun, ", "))
			default: // stepNoTests
				t.Status = ResultFail
				t.Message = fmt.Sprintf("the README describes this step but no TestStep%d test exists", s.N)
			}
			if t.RanAt == "" {
				t.RanAt = times.last(pkg, s.Tests)
			}
			counts[t.Status]++
			r.Tests = append(r.Tests, t)
		}
	}
	switch {
	case len(r.Tests) == 0:
		r.Status = ResultError
		r.Message = "no lab has a step yet: labs/ holds no lab with TestStep tests"
	case counts[ResultError] == len(r.Tests):
		r.Status = ResultError
		r.Message = strings.Join(broken, "\n\n")
	case counts[ResultPass] == len(r.Tests):
		r.Status = ResultPass
	default:
		r.Status = ResultFail
	}
	return r
}

// stepCommand returns the go test command that runs step s's tests.
func stepCommand(info lab.Info, s lab.StepResult) string {
	if len(s.Tests) == 0 {
		return ""
	}
	return fmt.Sprintf("go test -run '^(%s)$' %s", strings.Join(s.Tests, "|"), info.Pattern())
}

// failureStory returns the first failing test's name and the first lines
// it wrote, as check prints them.
func failureStory(s lab.StepResult) string {
	t := s.Failed[0]
	more := ""
	if len(s.Failed) > 1 {
		more = fmt.Sprintf(" (and %d more failing test(s) in this step)", len(s.Failed)-1)
	}
	lines := []string{t.Name + " failed" + more + ":"}
	for _, line := range repo.FirstLines(t.FailureLines(), 8) {
		lines = append(lines, strings.TrimLeft(line, " \t"))
	}
	return strings.Join(lines, "\n")
}

// EventTimes holds, by package and top-level test, the time of the event
// that ended it in a `go test -json` stream; the test "" is the package's
// own end (its pass or fail, a build failure included).
type EventTimes map[string]map[string]time.Time

// parseEventTimes reads the Time of the pass, fail and skip events of a
// `go test -json` stream (gotest.Parse reads the rest).
func parseEventTimes(stream []byte) EventTimes {
	times := EventTimes{}
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev struct {
			Time    time.Time
			Action  string
			Package string
			Test    string
		}
		if json.Unmarshal(line, &ev) != nil || ev.Package == "" || ev.Time.IsZero() {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
		default:
			continue
		}
		if strings.Contains(ev.Test, "/") {
			continue // a subtest: its top-level test ends later
		}
		if times[ev.Package] == nil {
			times[ev.Package] = map[string]time.Time{}
		}
		if ev.Time.After(times[ev.Package][ev.Test]) {
			times[ev.Package][ev.Test] = ev.Time
		}
	}
	return times
}

// at returns when the test (or, for "", the package) ended, or "".
func (t EventTimes) at(pkg, test string) string {
	if at, ok := t[pkg][test]; ok {
		return rfc3339UTC(at)
	}
	return ""
}

// last returns when the last of the tests that ended did, or "".
func (t EventTimes) last(pkg string, tests []string) string {
	var last time.Time
	for _, name := range tests {
		if at := t[pkg][name]; at.After(last) {
			last = at
		}
	}
	if last.IsZero() {
		return ""
	}
	return rfc3339UTC(last)
}

func rfc3339UTC(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}
