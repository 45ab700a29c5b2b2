package contract

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// mutants (clause 6) judges each mutant's run (started by startMutants):
// applied to the reference and overlaid on the lab, the mutant's step must
// fail.
func (lr *labRun) mutants(ctx context.Context) error {
	if lr.solFiles == nil || lr.refPassed == nil {
		if lr.cancelMutants != nil {
			lr.cancelMutants() // nothing to judge them against
		}
		return nil // clause 5 said why there is no reference to compare with
	}
	dir, mutants, problems := lr.mutantDir, lr.mutantList, lr.mutantProblems
	if len(mutants) == 0 && len(problems) == 1 && strings.HasPrefix(problems[0], "no mutants directory") {
		lr.fail(6, "mutants", problems[0], nil)
		return nil
	}
	if len(problems) > 0 {
		lr.fail(6, "mutants", "malformed mutants", problems)
	}
	if len(mutants) == 0 {
		if len(problems) == 0 {
			lr.fail(6, "mutants", "no mutants in "+dir, []string{"every pitfall of the lab needs a mutant: " + dir + "/<pitfall>" + lab.MutantExt})
		}
		return nil
	}
	if lr.refsErr != nil {
		lr.fail(6, "mutants", lr.refsErr.Error(), nil)
		return nil
	}
	for _, m := range mutants {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		what := fmt.Sprintf("mutant %s is caught by step %d", m.Name, m.Step)
		if p := m.StepProblem(lr.info); p != "" {
			lr.fail(6, what, p, nil)
			continue
		}
		if m.Race {
			if !lr.opts.race {
				lr.r.note(fmt.Sprintf("%s mutant %s skipped: it is a data race, and the race detector is unavailable here", lr.lab.Name, m.Name))
				continue
			}
			what += " under -race"
		}
		mr := lr.mutantRuns[m.Name].get()
		o, problems := mr.o, mr.problems
		switch {
		case problems != nil:
			lr.fail(6, what, "the mutant cannot be checked", problems)
		case o.CompileErrs != nil:
			lr.fail(6, what, "the mutant does not compile", o.CompileErrs)
		default:
			why, detail, also := mutantVerdict(o, m, lr.refPassed)
			switch story := storyProblems(o.Steps); {
			case why != "":
				lr.fail(6, what, why, detail)
			case len(story) > 0:
				// Clause 4 asks of a mutant's failures what it asks of
				// the starter's.
				lr.fail(6, what, "caught, but not every failure tells its story (clause 4: \"step N\" and a number, in the test's own words)", story)
			default:
				lr.ok(6, what+alsoFails(also))
			}
		}
	}
	return nil
}

// runMutant applies m to the references, overlays the solution and the
// edited files on the lab, and runs the lab's tests but the experiment
// with the extra flags (the experiment measures, against the starter and
// the reference as well: on lab 10 it is half the run, and no mutant is
// caught by it, see lab.Mutant.StepProblem). It returns the problems when
// the mutant does not apply.
func runMutant(ctx context.Context, ws *repo.Workspace, l lab.Lab, info lab.Info, editable []string, solFiles map[string]string, refs map[string][]byte, m lab.Mutant, tmp string, flags ...string) (lab.Outcome, []string) {
	rel := path.Join("solutions", l.Name, "mutants", m.Name+lab.MutantExt)
	written, problems := lab.WriteMutant(filepath.Join(tmp, "mutants", m.Name), rel, m, refs)
	if problems != nil {
		return lab.Outcome{}, problems
	}
	if lab.ChangesNothing(written, refs) {
		return lab.Outcome{}, []string{rel + ": the mutant changes nothing but comments and spacing: its edits must change the code"}
	}
	replace := solutionOverlay(ws, editable, solFiles)
	for _, f := range editable {
		if p, ok := written[path.Base(f)]; ok {
			replace[ws.Abs(f)] = p
		}
	}
	overlay, err := writeOverlay(tmp, "mutant-"+m.Name+".json", replace)
	if err != nil {
		return lab.Outcome{}, []string{err.Error()}
	}
	var env []string
	if !slices.Contains(flags, "-race") {
		env = mutantEnv
	}
	args := append(append(overlayArgs(overlay), flags...), "-skip", gotest.ExperimentPattern, l.Pattern())
	run, res := ws.GoTestEnv(ctx, lab.TestTimeout, env, args...)
	return lab.OutcomeOf(ws, info.WithoutExperiment(), run, res), nil
}

// mutantVerdict says why a mutant's run does not show it caught by its
// step ("" when it is caught), and, when it is, which other steps fail too
// (so that a mutant that breaks everything is seen to). A test counts only
// if it passed on the reference (refPassed, by test name): a test that
// fails on the reference too proves nothing about the mutant.
func mutantVerdict(o lab.Outcome, m lab.Mutant, refPassed map[string]bool) (why string, detail []string, also []int) {
	var failing []string
	var mine *lab.StepResult
	for i, s := range o.Steps {
		if s.N == m.Step {
			mine = &o.Steps[i]
			continue
		}
		if s.State == lab.StepFailing || s.State == lab.StepNotRun {
			failing = append(failing, fmt.Sprint(s.N))
			also = append(also, s.N)
		}
	}
	if mine != nil {
		for _, t := range mine.Failed {
			if refPassed[t.Name] {
				return "", nil, also
			}
		}
		refFails := len(mine.Tests) > 0
		for _, name := range mine.Tests {
			if refPassed[name] {
				refFails = false
			}
		}
		switch {
		case len(mine.Failed) > 0 && refFails:
			return fmt.Sprintf("not checked: step %d fails on the reference too (clause 5), so its failure here proves nothing", m.Step), nil, also
		case len(mine.Failed) > 0:
			return fmt.Sprintf("step %d's failing tests (%s) fail on the reference too; no test that passes on the reference fails here", m.Step, testNames(mine.Failed)), nil, also
		case mine.State == lab.StepNotRun:
			detail := []string{"the test binary's last output:"}
			if o.Pkg != nil {
				detail = append(detail, lastLines(o.Pkg.Output, 10)...)
			}
			return fmt.Sprintf("step %d did not run or did not finish (%s): the test binary crashed or timed out before it; make the mutant fail step %d instead of crashing",
				m.Step, strings.Join(mine.NotRun, ", "), m.Step), detail, also
		}
	}
	if len(failing) == 0 {
		return "every test passes against the mutant", []string{fmt.Sprintf("step %d needs an assertion this mutant fails", m.Step)}, nil
	}
	return fmt.Sprintf("step %d passes against the mutant (failing instead: step %s)", m.Step, strings.Join(failing, ", ")), nil, also
}

// alsoFails is the note an ok line gets when other steps fail too.
func alsoFails(steps []int) string {
	if len(steps) == 0 {
		return ""
	}
	var s []string
	for _, n := range steps {
		s = append(s, fmt.Sprint(n))
	}
	return " (also fails step " + strings.Join(s, ", ") + ")"
}

func testNames(ts []*gotest.Test) string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

// lastLines returns the last n lines.
func lastLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}
