package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// solutionTestTimeout covers -count=3 under -race.
const solutionTestTimeout = 10 * time.Minute

// The go command runs of verify's lab clauses: the starter (clause 2), the
// reference (clause 5) and the running system's build (clause 10). The
// mutants' runs are in verify_mutants.go, the project's in hygiene.go.

// runStarter reports the pristine starter's vet and test run (started by
// startRuns), keeping the run for clauses 3 and 4. Without a known starter
// it does nothing.
func (lr *labRun) runStarter(ctx context.Context) error {
	if lr.starterVet == nil {
		return nil
	}
	what := "the starter compiles and passes go vet"
	if res := lr.starterVet.get(); res.Err != nil {
		lr.fail(2, what, "go vet failed", res.Combined())
	} else {
		lr.ok(2, what)
	}
	t := lr.starterTest.get()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	o := lab.OutcomeOf(lr.ws, lr.info, t.run, t.res)
	if o.CompileErrs != nil {
		lr.fail(2, "the pristine starter's tests compile", "the starter does not compile", o.CompileErrs)
		return nil
	}
	lr.starterRun = o.Pkg
	return nil
}

// solutionArgs returns the flags of the reference's run of every test but
// the experiment, and the check's description: -count=3, with -race when
// available (never for the capstone, see lab.TestSource.Capstone); the
// experiment, which measures, runs once without -race, as check runs it.
func (lr *labRun) solutionArgs() (args []string, what string) {
	what = "the solution passes every test (-count=3"
	args = append(overlayArgs(lr.solOverlay), "-count=3", "-skip", gotest.ExperimentPattern)
	switch {
	case lr.info.Tests.Capstone(lr.ws.Module):
		what += ", without -race: the capstone's plan is data"
	case lr.opts.race:
		what += ", -race"
		args = append(args, "-race")
	}
	return args, what + "; the experiment once, without -race)"
}

// runSolution reports the reference's runs (started by startRuns; see
// solutionArgs).
func (lr *labRun) runSolution(ctx context.Context) {
	_, what := lr.solutionArgs()
	if lr.solOverlayErr != nil {
		lr.fail(5, what, lr.solOverlayErr.Error(), nil)
		return
	}
	t := lr.solTest.get()
	run, res := t.run, t.res
	exp := lr.solExperiment.get()
	if run.Compiled(path.Join(lr.ws.Module, lr.info.Dir())) && ctx.Err() == nil {
		run.Merge(exp.run)
		if res.Err == nil {
			res = exp.res
		}
	}
	o := lab.OutcomeOf(lr.ws, lr.info, run, res)
	if o.CompileErrs != nil {
		lr.fail(5, what, "the solution does not compile", o.CompileErrs)
		return
	}
	lr.refPassed = passedTests(o.Pkg)
	var problems []string
	for _, s := range o.Steps {
		for _, t := range s.Failed {
			problems = append(problems, t.Name+" failed:")
			for _, line := range repo.FirstLines(t.FailureLines(), 6) {
				problems = append(problems, "    "+line)
			}
		}
		for _, t := range s.NotRun {
			problems = append(problems, t+" did not run or did not finish")
		}
	}
	if len(problems) == 0 && o.Pkg.Action != "pass" {
		problems = append(problems, "the test binary failed:")
		problems = append(problems, repo.FirstLines(o.Pkg.Output, 10)...)
	}
	if len(o.Steps) == 0 {
		problems = append(problems, "no step test ran")
	}
	if len(problems) > 0 {
		lr.fail(5, what, "tests fail against the reference solution", problems)
		return
	}
	lr.ok(5, what)
}

// verifyLearnerBuild (clause 10) builds the running system
// (cmd/fooddelivery) with the learner tag of every present lab of labs that
// runs in it, over the pristine starters collected in opts.starters: the
// glue in each learnerNN.go must compile against the starter's API, so that
// "workshop live NN" works before the learner has written a line. A lab
// whose pristine starter is unknown (no git) is built from its working
// copy. A repository without cmd/fooddelivery has nothing to build.
func verifyLearnerBuild(ctx context.Context, ws *repo.Workspace, r *report, labs []lab.Lab, opts options) error {
	if _, err := os.Stat(ws.Abs(lab.FooddeliveryPkg)); err != nil {
		return nil
	}
	var tags []string
	for _, l := range labs {
		if l.Present && l.RunsInTheSystem() {
			tags = append(tags, l.LearnerTag())
		}
	}
	if len(tags) == 0 {
		return nil
	}
	what := fmt.Sprintf("clause %d: the running system builds with the pristine starters' learner code (go build -tags %s %s)",
		clauseLearnerBuild, strings.Join(tags, ","), lab.FooddeliveryPkg)
	overlay, err := writeOverlay(opts.tmp, "learners.json", opts.starters)
	if err != nil {
		return err
	}
	bin := filepath.Join(opts.tmp, "fooddelivery")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	args := append(append([]string{"build", "-tags", strings.Join(tags, ",")}, overlayArgs(overlay)...), "-o", bin, lab.FooddeliveryPkg)
	res := ws.GoCmd(ctx, lab.BuildTimeout, args...)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case res.Err != nil:
		r.fail(what, "go build failed: a learnerNN.go no longer matches its lab's starter", res.Combined())
	default:
		r.ok(what)
	}
	return nil
}

// writeOverlay writes a go build -overlay file; it returns "" for an empty
// replacement map.
func writeOverlay(dir, name string, replace map[string]string) (string, error) {
	if len(replace) == 0 {
		return "", nil
	}
	data, err := json.MarshalIndent(struct{ Replace map[string]string }{replace}, "", "  ")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, name)
	return file, os.WriteFile(file, data, 0o644)
}

func overlayArgs(overlay string) []string {
	if overlay == "" {
		return nil
	}
	return []string{"-overlay", overlay}
}

// solutionOverlay maps each editable file of the lab to the solution's file.
func solutionOverlay(ws *repo.Workspace, editable []string, solFiles map[string]string) map[string]string {
	replace := map[string]string{}
	for _, f := range editable {
		if sol, ok := solFiles[path.Base(f)]; ok {
			replace[ws.Abs(f)] = sol
		}
	}
	return replace
}

// passedTests maps each test of a package's run to whether it passed
// (with -count=N: every time).
func passedTests(p *gotest.Package) map[string]bool {
	passed := map[string]bool{}
	if p != nil {
		for name, t := range p.Tests {
			passed[name] = t.Action == "pass"
		}
	}
	return passed
}

// referencePassed runs the lab's tests but the experiment once against the
// reference, as runMutant runs a mutant's, and returns which passed;
// problems when it does not compile.
func referencePassed(ctx context.Context, ws *repo.Workspace, info lab.Info, editable []string, solFiles map[string]string, tmp string) (map[string]bool, []string) {
	overlay, err := writeOverlay(tmp, "solution.json", solutionOverlay(ws, editable, solFiles))
	if err != nil {
		return nil, []string{err.Error()}
	}
	run, res := ws.GoTest(ctx, lab.TestTimeout, append(overlayArgs(overlay), "-count=1", "-skip", gotest.ExperimentPattern, info.Pattern())...)
	o := lab.OutcomeOf(ws, info.WithoutExperiment(), run, res)
	if o.CompileErrs != nil {
		return nil, o.CompileErrs
	}
	return passedTests(o.Pkg), nil
}
