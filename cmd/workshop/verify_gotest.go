package main

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
)

// solutionTestTimeout covers -count=3 under -race.
const solutionTestTimeout = 10 * time.Minute

// The go command runs of verify's lab clauses: the starter (clause 2), the
// reference (clause 5) and the running system's build (clause 10). The
// mutants' runs are in verify_mutants.go, the project's in hygiene.go.

// runStarter vets the pristine starter and runs its tests once, keeping the
// run for clauses 3 and 4. Without a known starter it does nothing.
func (lr *labRun) runStarter(ctx context.Context) error {
	if lr.starter == nil {
		return nil
	}
	overlay, err := writeOverlay(lr.tmp, "starter.json", lr.starter.Replace)
	if err != nil {
		return err
	}
	what := "the starter compiles and passes go vet"
	res := lr.ws.goCmd(ctx, 5*time.Minute, append([]string{"vet"}, append(overlayArgs(overlay), lr.lab.Pattern())...)...)
	if res.err != nil {
		lr.fail(2, what, "go vet failed", res.combined())
	} else {
		lr.ok(2, what)
	}
	run, res := lr.ws.goTest(ctx, labTestTimeout, append(overlayArgs(overlay), "-count=1", lr.lab.Pattern())...)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	o := lr.ws.outcome(lr.info, run, res)
	if o.compileErrs != nil {
		lr.fail(2, "the pristine starter's tests compile", "the starter does not compile", o.compileErrs)
		return nil
	}
	lr.starterRun = o.pkg
	return nil
}

// runSolution runs the lab's tests against the reference: -count=3, with
// -race when available (never for the capstone, see testSource.capstone),
// all but the experiment, which measures, so it runs once without -race,
// as check runs it.
func (lr *labRun) runSolution(ctx context.Context) {
	overlay, err := writeOverlay(lr.tmp, "solution.json", lr.ws.solutionOverlay(lr.editable, lr.solFiles))
	what := "the solution passes every test (-count=3"
	args := append(overlayArgs(overlay), "-count=3", "-skip", experimentPattern)
	switch {
	case lr.info.Tests.capstone(lr.ws.module):
		what += ", without -race: the capstone's plan is data"
	case lr.opts.race:
		what += ", -race"
		args = append(args, "-race")
	}
	what += "; the experiment once, without -race)"
	if err != nil {
		lr.fail(5, what, err.Error(), nil)
		return
	}
	run, res := lr.ws.goTest(ctx, solutionTestTimeout, append(args, lr.lab.Pattern())...)
	if run.compiled(path.Join(lr.ws.module, lr.info.Dir())) && ctx.Err() == nil {
		exp, expRes := lr.ws.goTest(ctx, labTestTimeout, append(overlayArgs(overlay), "-count=1", "-run", experimentPattern, lr.lab.Pattern())...)
		run.merge(exp)
		if res.err == nil {
			res = expRes
		}
	}
	o := lr.ws.outcome(lr.info, run, res)
	if o.compileErrs != nil {
		lr.fail(5, what, "the solution does not compile", o.compileErrs)
		return
	}
	lr.refPassed = passedTests(o.pkg)
	var problems []string
	for _, s := range o.steps {
		for _, t := range s.Failed {
			problems = append(problems, t.Name+" failed:")
			for _, line := range firstLines(t.failureLines(), 6) {
				problems = append(problems, "    "+line)
			}
		}
		for _, t := range s.NotRun {
			problems = append(problems, t+" did not run or did not finish")
		}
	}
	if len(problems) == 0 && o.pkg.Action != "pass" {
		problems = append(problems, "the test binary failed:")
		problems = append(problems, firstLines(o.pkg.Output, 10)...)
	}
	if len(o.steps) == 0 {
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
func (ws *workspace) verifyLearnerBuild(ctx context.Context, r *report, labs []lab, opts verifyOptions) error {
	if _, err := os.Stat(ws.abs(fooddeliveryPkg)); err != nil {
		return nil
	}
	var tags []string
	for _, l := range labs {
		if l.Present && l.runsInTheSystem() {
			tags = append(tags, l.learnerTag())
		}
	}
	if len(tags) == 0 {
		return nil
	}
	what := fmt.Sprintf("clause %d: the running system builds with the pristine starters' learner code (go build -tags %s %s)",
		clauseLearnerBuild, strings.Join(tags, ","), fooddeliveryPkg)
	overlay, err := writeOverlay(opts.tmp, "learners.json", opts.starters)
	if err != nil {
		return err
	}
	bin := filepath.Join(opts.tmp, "fooddelivery")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	args := append(append([]string{"build", "-tags", strings.Join(tags, ",")}, overlayArgs(overlay)...), "-o", bin, fooddeliveryPkg)
	res := ws.goCmd(ctx, buildTimeout, args...)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case res.err != nil:
		r.fail(what, "go build failed: a learnerNN.go no longer matches its lab's starter", res.combined())
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
func (ws *workspace) solutionOverlay(editable []string, solFiles map[string]string) map[string]string {
	replace := map[string]string{}
	for _, f := range editable {
		if sol, ok := solFiles[path.Base(f)]; ok {
			replace[ws.abs(f)] = sol
		}
	}
	return replace
}

// passedTests maps each test of a package's run to whether it passed
// (with -count=N: every time).
func passedTests(p *pkgResult) map[string]bool {
	passed := map[string]bool{}
	if p != nil {
		for name, t := range p.Tests {
			passed[name] = t.Action == "pass"
		}
	}
	return passed
}

// referencePassed runs the lab's tests once against the reference and
// returns which passed; problems when it does not compile.
func (ws *workspace) referencePassed(ctx context.Context, info labInfo, editable []string, solFiles map[string]string, tmp string) (map[string]bool, []string) {
	overlay, err := writeOverlay(tmp, "solution.json", ws.solutionOverlay(editable, solFiles))
	if err != nil {
		return nil, []string{err.Error()}
	}
	run, res := ws.goTest(ctx, labTestTimeout, append(overlayArgs(overlay), "-count=1", info.Pattern())...)
	o := ws.outcome(info, run, res)
	if o.compileErrs != nil {
		return nil, o.compileErrs
	}
	return passedTests(o.pkg), nil
}
