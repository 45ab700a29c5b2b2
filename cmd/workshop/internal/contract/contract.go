package contract

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// The lab contract is written down in CONTRIBUTING.md, clause by clause;
// contract is the same list as verify runs it on each lab, and a test
// keeps the two in step. Clause 10 spans every lab (verifyLearnerBuild) and
// clauses 11 to 14 check the project (verifyProject).
var contract = []clause{
	{1, "the pristine starter is pinned", (*labRun).pinnedStarter},
	{2, "few, short editable files that compile", (*labRun).editableFiles},
	{3, "steps, each failing on the starter", (*labRun).steps},
	{4, "failures that teach", (*labRun).failuresTeach},
	{5, "a reference solution that passes", (*labRun).solution},
	{6, "mutants, each caught by its step", (*labRun).mutants},
	{7, "no real sockets", (*labRun).noSockets},
	{8, "self-contained", (*labRun).selfContained},
	{9, "a README read in ten minutes, in the usual order", (*labRun).readme},
	{clauseGerman, "German beside the English, in sync", (*labRun).german},
}

// Clauses checked outside the per-lab table.
const (
	clauseLearnerBuild = 10
	clauseVetFmt       = 11
	clauseProjectTests = 12
	clauseBrowser      = 13
	clauseBench        = 14
	clauseGerman       = 15 // per lab, and for the project's texts
)

// otherClauses names the clauses checked outside the per-lab table, for the
// test that keeps this file and CONTRIBUTING.md in step.
var otherClauses = []clause{
	{clauseLearnerBuild, "the running system runs every starter", nil},
	{clauseVetFmt, "vetted and formatted", nil},
	{clauseProjectTests, "tested", nil},
	{clauseBrowser, "seen in a browser", nil},
	{clauseBench, "the references keep up with the libraries beside them", nil},
}

const (
	maxEditableFiles = 2
	maxEditableLines = 160
)

// A clause is one numbered rule of the lab contract and its check.
type clause struct {
	n     int
	title string
	// check reports its findings through the labRun; it returns an error
	// only when verify cannot go on (cancelled, the disk failed).
	check func(lr *labRun, ctx context.Context) error
}

// labRun is what the clauses learn about one lab as verify checks it.
type labRun struct {
	ws       *repo.Workspace
	r        *report
	opts     options
	lab      lab.Lab
	info     lab.Info
	editable []string // the starter's editable files (slash paths)
	tmp      string   // this lab's scratch directory

	starter    *lab.Pristine     // nil when unknown (no git, no manifest)
	starterRun *gotest.Package   // the starter's test run; nil if it did not compile
	solFiles   map[string]string // the reference's files by base name; nil if unusable
	refPassed  map[string]bool   // test name -> passed on the reference (clause 5); nil if it did not run

	// The runs startRuns starts, and what it found on the way; a nil
	// future did not start.
	starterVet     *future[repo.Result]
	starterTest    *future[goRun]
	solProblems    []string // the reference's layout (clause 5)
	solOverlay     string
	solOverlayErr  error
	solTest        *future[goRun] // -count=3, all but the experiment
	solExperiment  *future[goRun]
	mutantDir      string
	mutantList     []lab.Mutant
	mutantProblems []string
	refs           map[string][]byte // the reference's files, for the mutants' edits
	refsErr        error
	mutantRuns     map[string]*future[mutantRun] // by mutant name
	cancelMutants  context.CancelFunc            // stops the mutants' runs; nil before startMutants
	waits          []func()                      // wait for each run started
}

// check prints one finding of clause n: "NN-name clause n: what".
func (lr *labRun) check(n int, what string, problems []string) {
	lr.r.check(fmt.Sprintf("%s clause %d: %s", lr.lab.Name, n, what), problems)
}

func (lr *labRun) ok(n int, what string) { lr.check(n, what, nil) }

func (lr *labRun) fail(n int, what, why string, detail []string) {
	lr.r.fail(fmt.Sprintf("%s clause %d: %s", lr.lab.Name, n, what), why, detail)
}

// pinnedStarter (clause 1) finds the pristine starter in labs/starters.txt
// and git; the later clauses check it instead of the working copy.
func (lr *labRun) pinnedStarter(ctx context.Context) error {
	what := "the starter is pinned in " + lab.ManifestPath
	if lr.opts.manifestErr != nil {
		lr.fail(1, what, lr.opts.manifestErr.Error(), []string{"run go run ./cmd/workshop pin"})
		return nil
	}
	p := lab.PristineStarter(ctx, lr.ws, lr.lab, lr.editable, lr.opts.manifest, lr.tmp)
	switch {
	case p.Skip != "":
		lr.r.note(p.Skip) // inOrder prints it once, for the first lab

	case p.Problem != nil:
		lr.fail(1, what, "the pristine starter cannot be built", p.Problem)
	default:
		what = fmt.Sprintf("%s: %d file(s)", what, len(p.Files))
		if n := len(p.Replace); n > 0 {
			what += fmt.Sprintf(", %d edited in the working copy (checking the pinned version)", n)
		}
		lr.ok(1, what)
		lr.starter = &p
		lr.editable = p.Files
		if lr.opts.starters != nil {
			lr.opts.startersMu.Lock()
			maps.Copy(lr.opts.starters, p.Replace)
			lr.opts.startersMu.Unlock()
		}
	}
	return nil
}

// editableFiles (clause 2) counts the editable files and their lines, then
// reports the pristine starter's vet and tests (the run clauses 3 and 4
// read; startRuns started them).
func (lr *labRun) editableFiles(ctx context.Context) error {
	var problems, sizes []string
	if n := len(lr.editable); n == 0 || n > maxEditableFiles {
		problems = append(problems, fmt.Sprintf("%d editable files (%s), want 1 or %d", n, strings.Join(lr.editable, ", "), maxEditableFiles))
	}
	for _, f := range lr.editable {
		var data []byte
		var err error
		if lr.starter != nil {
			data = lr.starter.Content[f]
		} else if data, err = os.ReadFile(lr.ws.Abs(f)); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		n := countLines(data)
		sizes = append(sizes, fmt.Sprintf("%s %d lines", path.Base(f), n))
		if n > maxEditableLines {
			problems = append(problems, fmt.Sprintf("%s has %d lines, want at most %d", f, n, maxEditableLines))
		}
	}
	lr.check(2, fmt.Sprintf("editable files (%s)", strings.Join(sizes, ", ")), problems)
	return lr.runStarter(ctx)
}

// steps (clause 3) checks the test names, then that every step fails on
// the pristine starter.
func (lr *labRun) steps(ctx context.Context) error {
	lr.check(3, "tests are named TestStep<N><Name>, steps 1..N, the last is TestStep<N>Experiment", stepNameProblems(lr.info.Tests))
	if lr.starterRun == nil {
		return nil
	}
	var passing []string
	for _, s := range lab.StepResults(lr.starterRun, lr.info.Tests.Tests, nil) {
		if s.State == lab.StepPassed {
			passing = append(passing, fmt.Sprintf("step %d passes on the starter (%s): add an assertion the starter fails", s.N, strings.Join(s.Tests, ", ")))
		}
	}
	lr.check(3, "every step fails on the starter", passing)
	return nil
}

// failuresTeach (clause 4): every starter failure tells its story (see
// storyProblem; the mutants' failures are checked with the mutants), and
// no test classifies an error by its text.
func (lr *labRun) failuresTeach(ctx context.Context) error {
	if lr.starterRun != nil {
		steps := lab.StepResults(lr.starterRun, lr.info.Tests.Tests, nil)
		unnamed := storyProblems(steps)
		var crashed []string
		for _, s := range steps {
			if len(s.NotRun) > 0 {
				crashed = append(crashed, fmt.Sprintf("%s did not run or did not finish: an earlier test crashed the test binary", strings.Join(s.NotRun, ", ")))
			}
		}
		if len(crashed) > 0 {
			crashed = append(crashed, repo.FirstLines(lr.starterRun.Output, 10)...)
		}
		lr.check(4, "every starter failure tells its story (\"step N\" and a number, in the test's own words)", append(unnamed, crashed...))
	}
	lr.check(4, "tests do not classify errors by message text", lr.info.Tests.ErrorText)
	return nil
}

// solution (clause 5) reports the reference's layout, then the lab's
// tests against it (startRuns read the layout and started the runs).
func (lr *labRun) solution(ctx context.Context) error {
	lr.check(5, "solutions/"+lr.lab.Name+" has the lab's file names, NOTES.md and no tests", lr.solProblems)
	if lr.solFiles != nil {
		lr.runSolution(ctx)
	}
	return nil
}

// noSockets (clause 7): lab tests run on the in-memory network.
func (lr *labRun) noSockets(ctx context.Context) error {
	lr.check(7, "tests use no real sockets (httptest.NewServer, net.Listen, net.Dial)", lr.info.Tests.Sockets)
	return nil
}

// selfContained (clause 8): a lab imports no other lab and no solution.
func (lr *labRun) selfContained(ctx context.Context) error {
	var overlay string
	if lr.starter != nil && len(lr.starter.Replace) > 0 {
		overlay = filepath.Join(lr.tmp, "starter.json")
	}
	lr.check(8, "imports no other lab and no solution", importProblems(ctx, lr.ws, lr.lab, overlay))
	return nil
}

// readme (clause 9) checks the README's sections and step headings, then
// the hints in HINTS.md beside it.
func (lr *labRun) readme(ctx context.Context) error {
	lr.check(9, "README.md has the sections in order, a heading per step, at most 2,000 words, and links PRODUCTION.md", readmeProblems(lr.ws, lr.info))
	lr.check(9, "HINTS.md parses, its steps have tests, its hints go from gentle to explicit, and README.md links to it", hintsProblems(lr.ws, lr.info))
	return nil
}

// german (clause 15) checks the lab's German texts against the English
// when the lab has a README.de.md, and requires them once the repository
// has a German edition (a README.de.md at its root).
func (lr *labRun) german(ctx context.Context) error {
	if _, err := os.Stat(lr.ws.Abs(path.Join(lr.info.Dir(), germanName("README.md")))); err == nil || hasGermanEdition(lr.ws) {
		lr.check(clauseGerman, "README.de.md, HINTS.de.md and PRODUCTION.de.md translate the English section by section, in sync", germanLabProblems(lr.ws, lr.info))
	}
	return nil
}

// countLines counts lines the way an editor shows them.
func countLines(data []byte) int {
	if len(data) == 0 {
		return 0
	}
	n := strings.Count(string(data), "\n")
	if data[len(data)-1] != '\n' {
		n++
	}
	return n
}
