package lab

import (
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/i18n"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// TestTimeout is the -timeout of one lab's test binary. The lab test
// helper's fake-time watchdog normally ends a stuck scenario long before.
const TestTimeout = 3 * time.Minute

// Info is what the tool knows about a present lab without running it.
type Info struct {
	Lab
	Tests  TestSource
	Readme Readme
	Steps  []int // step numbers from the tests and the README, sorted
	// ReadmeName is the README the step titles come from: README.md, or
	// README.de.md when the learner's commands speak German and the lab
	// has one.
	ReadmeName string
	// P is the language of the learner's commands (the workspace's).
	P *i18n.Printer
}

// ReadInfo reads what l's files say about it: its tests (with go/parser,
// so that a lab that does not compile still has its steps), its README and
// the step numbers of both.
func ReadInfo(ws *repo.Workspace, l Lab) (Info, error) {
	info := Info{Lab: l, ReadmeName: Localized(ws, l, "README.md"), P: ws.P}
	_, tests, err := Files(ws, l.Dir())
	if err != nil {
		return info, err
	}
	info.Tests = parseTestSource(ws, tests)
	if data, err := os.ReadFile(ws.Abs(path.Join(l.Dir(), info.ReadmeName))); err == nil {
		info.Readme = ParseReadme(string(data))
	}
	seen := map[int]bool{}
	for _, t := range info.Tests.Tests {
		if n := StepOf(t); n > 0 {
			seen[n] = true
		}
	}
	for n := range info.Readme.Steps {
		seen[n] = true
	}
	for n := range seen {
		info.Steps = append(info.Steps, n)
	}
	sort.Ints(info.Steps)
	return info, nil
}

// Localized returns the name of lab l's text name (README.md, HINTS.md)
// in the language of the learner's commands: the German X.de.md when they
// speak German and the lab has it, else name.
func Localized(ws *repo.Workspace, l Lab, name string) string {
	if ws.P.Lang() == "de" {
		de := strings.TrimSuffix(name, ".md") + ".de.md"
		if _, err := os.Stat(ws.Abs(path.Join(l.Dir(), de))); err == nil {
			return de
		}
	}
	return name
}

// StepTitle returns "step N: title" (or "step N" when the README has
// none), in the language of the learner's commands.
func (info Info) StepTitle(n int) string {
	if t := info.Readme.Steps[n]; t != "" {
		return info.P.Sprintf("step %d: %s", n, t)
	}
	return info.P.Sprintf("step %d", n)
}

// StepLink returns where to read about step n.
func (info Info) StepLink(n int) string {
	name := info.ReadmeName
	if name == "" {
		name = "README.md"
	}
	link := info.Dir() + "/" + name
	if a := info.Readme.Anchors[n]; a != "" {
		link += "#" + a
	}
	return link
}

// Outcome is a present lab after its tests ran.
type Outcome struct {
	Info        Info
	Pkg         *gotest.Package
	CompileErrs []string // non-nil when the lab does not build
	Steps       []StepResult
	Events      []byte // the run's go test -json lines, when labrun.Run ran it or had it cached
}

// Passed counts the steps that passed.
func (o Outcome) Passed() int {
	n := 0
	for _, s := range o.Steps {
		if s.State == StepPassed {
			n++
		}
	}
	return n
}

// Done reports whether the lab built and every step passed.
func (o Outcome) Done() bool {
	return o.CompileErrs == nil && len(o.Steps) > 0 && o.Passed() == len(o.Steps)
}

// OutcomeOf combines a lab's source knowledge with a test run.
func OutcomeOf(ws *repo.Workspace, info Info, run *gotest.Run, res repo.Result) Outcome {
	o := Outcome{Info: info}
	o.Pkg = run.Packages[path.Join(ws.Module, info.Dir())]
	switch {
	case o.Pkg == nil:
		// The go command failed before the package ran (a syntax error in
		// go.mod, a setup failure): show what it said.
		lines := append(append([]string{}, run.Other...), repo.SplitLines(string(res.Stderr))...)
		if len(lines) == 0 {
			lines = []string{"go test reported nothing for this lab"}
		}
		o.CompileErrs = lines
	case o.Pkg.BuildFailed:
		o.CompileErrs = o.Pkg.BuildOutput
		if len(o.CompileErrs) == 0 {
			o.CompileErrs = append(run.Other, repo.SplitLines(string(res.Stderr))...)
		}
	}
	o.Steps = StepResults(o.Pkg, info.Tests.Tests, info.Steps)
	return o
}

// ExperimentSteps returns the steps whose tests are all experiments
// (TestStep<N>Experiment, gotest.ExperimentPattern), in order: the steps
// that measure rather than judge one behaviour.
func (info Info) ExperimentSteps() []int {
	var out []int
	for _, n := range info.Steps {
		tests, all := 0, true
		for _, t := range info.Tests.Tests {
			if StepOf(t) == n {
				tests++
				all = all && experimentTest.MatchString(t)
			}
		}
		if tests > 0 && all {
			out = append(out, n)
		}
	}
	return out
}

// WithoutExperiment returns info without the experiment tests and the
// steps they alone make up: what a run with -skip
// gotest.ExperimentPattern can report on.
func (info Info) WithoutExperiment() Info {
	exp := info.ExperimentSteps()
	out := info
	out.Tests.Tests = nil
	for _, t := range info.Tests.Tests {
		if !experimentTest.MatchString(t) {
			out.Tests.Tests = append(out.Tests.Tests, t)
		}
	}
	out.Steps = nil
	for _, n := range info.Steps {
		if !slices.Contains(exp, n) {
			out.Steps = append(out.Steps, n)
		}
	}
	return out
}
