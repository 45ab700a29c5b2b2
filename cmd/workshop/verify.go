package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

const (
	maxEditableFiles = 2
	maxEditableLines = 160
	// solutionTestTimeout covers -count=3 under -race.
	solutionTestTimeout = 10 * time.Minute
	// projectTestTimeout is the -timeout of each project test binary.
	projectTestTimeout = 10 * time.Minute
)

// report prints checks and counts them.
type report struct {
	w              io.Writer
	passed, failed int
}

func (r *report) ok(what string) {
	r.passed++
	fmt.Fprintf(r.w, "ok   %s\n", what)
}

func (r *report) fail(what, why string, detail []string) {
	r.failed++
	fmt.Fprintf(r.w, "FAIL %s: %s\n", what, why)
	for _, line := range firstLines(detail, 25) {
		fmt.Fprintf(r.w, "       %s\n", line)
	}
}

// check reports ok when problems is empty, else a failure listing them.
func (r *report) check(what string, problems []string) {
	switch len(problems) {
	case 0:
		r.ok(what)
	case 1:
		r.fail(what, problems[0], nil)
	default:
		r.fail(what, fmt.Sprintf("%d problems", len(problems)), problems)
	}
}

func (r *report) note(msg string) {
	fmt.Fprintf(r.w, "note %s\n", msg)
}

// verifyOptions are what every lab's checks share.
type verifyOptions struct {
	race        bool
	manifest    map[string]string
	manifestErr error
	tmp         string // a scratch directory for overlays and blobs
	skipNoted   *bool  // the "no git" notice is printed once
	// starters collects the pristine starters' overlay of every lab
	// checked (working path -> file with the pinned content), for the
	// build of the running system with the learners' code; nil: not
	// collected.
	starters map[string]string
}

// verify checks the lab contract for every present lab, then the project.
// When only names a lab ("02" or "02-deadlines"), verify checks that lab
// alone and skips the project checks.
func (ws *workspace) verify(ctx context.Context, only string) error {
	r := &report{w: ws.stdout}
	race := ws.raceAvailable(ctx)
	if !race {
		r.note("race detector unavailable (needs cgo, a C compiler and a supported platform): running without -race")
	}
	labs, err := ws.listLabs()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "workshop-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	manifest, _, manifestErr := ws.readManifest()
	skipNoted := false
	opts := verifyOptions{race: race, manifest: manifest, manifestErr: manifestErr, tmp: tmp, skipNoted: &skipNoted,
		starters: map[string]string{}}
	if only != "" {
		l, ok := findLab(labs, only)
		if !ok || !l.Present {
			fmt.Fprintf(ws.stderr, "no lab %q to verify\n", only)
			return errUsage
		}
		labs = []lab{l}
	}
	present := 0
	for _, l := range labs {
		if !l.Present {
			continue
		}
		present++
		fmt.Fprintf(ws.stdout, "\nLab %s\n", l.Name)
		if err := ws.verifyLab(ctx, r, l, opts); err != nil {
			return err
		}
	}
	if present == 0 {
		r.note("no labs yet: checking the project only")
	}
	if err := ws.verifyLearnerBuild(ctx, r, labs, opts); err != nil {
		return err
	}
	if only == "" {
		fmt.Fprintln(ws.stdout, "\nProject")
		if err := ws.verifyProject(ctx, r, race); err != nil {
			return err
		}
		if err := ws.verifyBrowser(ctx, r); err != nil {
			return err
		}
	}
	fmt.Fprintf(ws.stdout, "\n%d passed, %d failed\n", r.passed, r.failed)
	if r.failed > 0 {
		return errFailed
	}
	return nil
}

// verifyLab runs every contract check of one lab. It returns an error only
// when it cannot go on at all (the context was cancelled, the disk failed).
func (ws *workspace) verifyLab(ctx context.Context, r *report, l lab, opts verifyOptions) error {
	name := l.Name
	info, err := ws.labInfo(l)
	if err != nil {
		return err
	}
	editable, _, err := ws.labFiles(l.Dir())
	if err != nil {
		return err
	}
	labTmp := filepath.Join(opts.tmp, name)
	if err := os.MkdirAll(labTmp, 0o755); err != nil {
		return err
	}

	// The pristine starter, from the manifest.
	var starter *pristine
	switch {
	case opts.manifestErr != nil:
		r.fail(name+" starter manifest", opts.manifestErr.Error(), []string{"run go run ./cmd/workshop pin"})
	default:
		p := ws.pristineStarter(ctx, l, editable, opts.manifest, labTmp)
		switch {
		case p.Skip != "":
			if !*opts.skipNoted {
				r.note(p.Skip)
				*opts.skipNoted = true
			}
		case p.Problem != nil:
			r.fail(name+" starter manifest", "the pristine starter cannot be built", p.Problem)
		default:
			edited := len(p.Replace)
			msg := fmt.Sprintf("%s starter manifest: %d file(s) pinned", name, len(p.Files))
			if edited > 0 {
				msg += fmt.Sprintf(", %d edited in the working copy (checking the pinned version)", edited)
			}
			r.ok(msg)
			starter = &p
			editable = p.Files
			if opts.starters != nil {
				maps.Copy(opts.starters, p.Replace)
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	// Clause 1: few, short files.
	var problems []string
	if len(editable) == 0 || len(editable) > maxEditableFiles {
		problems = append(problems, fmt.Sprintf("%d editable files (%s), want 1 or %d", len(editable), strings.Join(editable, ", "), maxEditableFiles))
	}
	var sizes []string
	for _, f := range editable {
		var data []byte
		if starter != nil {
			data = starter.Content[f]
		} else if data, err = os.ReadFile(ws.abs(f)); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		n := countLines(data)
		sizes = append(sizes, fmt.Sprintf("%s %d lines", path.Base(f), n))
		if n > maxEditableLines {
			problems = append(problems, fmt.Sprintf("%s has %d lines, want at most %d", f, n, maxEditableLines))
		}
	}
	r.check(fmt.Sprintf("%s clause 1: editable files (%s)", name, strings.Join(sizes, ", ")), problems)

	// Clause 1: the starter compiles and passes go vet.
	var starterRun *pkgResult
	if starter != nil {
		overlay, err := writeOverlay(labTmp, "starter.json", starter.Replace)
		if err != nil {
			return err
		}
		res := ws.goCmd(ctx, 5*time.Minute, append([]string{"vet"}, append(overlayArgs(overlay), l.Pattern())...)...)
		if res.err != nil {
			r.fail(name+" clause 1: the starter compiles and passes go vet", "go vet failed", res.combined())
		} else {
			r.ok(name + " clause 1: the starter compiles and passes go vet")
		}
		args := append(overlayArgs(overlay), "-count=1", l.Pattern())
		run, res := ws.goTest(ctx, labTestTimeout, args...)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		o := ws.outcome(info, run, res)
		if o.compileErrs == nil {
			starterRun = o.pkg
		} else {
			r.fail(name+" pristine starter tests", "the starter does not compile", o.compileErrs)
		}
	}

	// Clause 2: step names.
	r.check(name+" clause 2: tests are named TestStep<N><Name>, steps 1..N, the last is TestStep<N>Experiment", stepNameProblems(info.Tests))

	// Clauses 2 and 3 on the pristine starter.
	if starterRun != nil {
		steps := stepResults(starterRun, info.Tests.Tests, nil)
		var passing, unnamed, crashed []string
		for _, s := range steps {
			if s.State == stepPassed {
				passing = append(passing, fmt.Sprintf("step %d passes on the starter (%s): add an assertion the starter fails", s.N, strings.Join(s.Tests, ", ")))
			}
			re := regexp.MustCompile(fmt.Sprintf(`(?i)\bstep\s*%d\b`, s.N))
			for _, t := range s.Failed {
				if !re.MatchString(strings.Join(t.failureLines(), "\n")) {
					unnamed = append(unnamed, fmt.Sprintf("%s fails without saying \"step %d\"; its output begins:", t.Name, s.N))
					for _, line := range firstLines(t.failureLines(), 4) {
						unnamed = append(unnamed, "    "+line)
					}
				}
			}
			if len(s.NotRun) > 0 {
				crashed = append(crashed, fmt.Sprintf("%s did not run or did not finish: an earlier test crashed the test binary", strings.Join(s.NotRun, ", ")))
			}
		}
		if len(crashed) > 0 {
			crashed = append(crashed, firstLines(starterRun.Output, 10)...)
		}
		r.check(name+" clause 2: every step fails on the starter", passing)
		r.check(name+" clause 3: every starter failure names its step (\"step N\")", append(unnamed, crashed...))
	}

	// Clause 3: errors are classified by errors.Is / errors.As.
	r.check(name+" clause 3: tests do not classify errors by message text", info.Tests.ErrorText)

	// Clause 4: the solution mirrors the lab and passes.
	solDir := "solutions/" + name
	solFiles, solProblems := ws.solutionLayout(solDir, editable)
	r.check(name+" clause 4: "+solDir+" has the lab's file names, NOTES.md and no tests", solProblems)
	if solFiles != nil {
		ws.verifySolution(ctx, r, l, info, editable, solFiles, labTmp, opts.race)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ws.verifyMutants(ctx, r, l, info, editable, solFiles, labTmp)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	// Clause 7: no real sockets.
	r.check(name+" clause 7: tests use no real sockets (httptest.NewServer, net.Listen)", info.Tests.Sockets)

	// Clause 10: no other lab, no solution.
	var overlay string
	if starter != nil && len(starter.Replace) > 0 {
		overlay = filepath.Join(labTmp, "starter.json")
	}
	r.check(name+" clause 10: imports no other lab and no solution", ws.importProblems(ctx, l, overlay))

	// README.
	r.check(name+" README.md has the sections in order and a heading per step", ws.readmeProblems(info))
	return nil
}

// verifyLearnerBuild builds the running system (cmd/fooddelivery) with the
// learner tag of every present lab of labs that runs in it, over the
// pristine starters collected in opts.starters: the glue in each
// learnerNN.go must compile against the starter's API, so that
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
	what := fmt.Sprintf("the running system builds with the pristine starters' learner code (go build -tags %s %s)",
		strings.Join(tags, ","), fooddeliveryPkg)
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

// stepNameProblems checks clause 2's naming rules on the test source.
func stepNameProblems(src testSource) []string {
	problems := append([]string{}, src.ParseErrs...)
	steps := map[int][]string{}
	for _, t := range src.Tests {
		if stepOf(t) == 0 {
			problems = append(problems, fmt.Sprintf("%s does not match ^TestStep[0-9]+[A-Z]", t))
			continue
		}
		steps[stepOf(t)] = append(steps[stepOf(t)], t)
	}
	if len(steps) == 0 {
		return append(problems, "no TestStep tests")
	}
	last := 0
	for n := range steps {
		last = max(last, n)
	}
	for n := 1; n <= last; n++ {
		if len(steps[n]) == 0 {
			problems = append(problems, fmt.Sprintf("step %d has no test (steps go 1..%d without gaps)", n, last))
		}
	}
	if !slices.Contains(steps[last], fmt.Sprintf("TestStep%dExperiment", last)) {
		problems = append(problems, fmt.Sprintf("the last step has no TestStep%dExperiment", last))
	}
	for n := 1; n < last; n++ {
		if exp := fmt.Sprintf("TestStep%dExperiment", n); slices.Contains(steps[n], exp) {
			problems = append(problems, fmt.Sprintf("%s is not in the last step (%d)", exp, last))
		}
	}
	return problems
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

// solutionLayout checks the solution directory and returns its files by
// base name (nil when it cannot be used).
func (ws *workspace) solutionLayout(solDir string, editable []string) (map[string]string, []string) {
	entries, err := os.ReadDir(ws.abs(solDir))
	if err != nil {
		return nil, []string{fmt.Sprintf("%s is missing", solDir)}
	}
	var problems []string
	files := map[string]string{}
	var have, want []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			have = append(have, e.Name())
			files[e.Name()] = ws.abs(path.Join(solDir, e.Name()))
		}
	}
	for _, f := range editable {
		want = append(want, path.Base(f))
	}
	sort.Strings(want)
	if !slices.Equal(have, want) {
		problems = append(problems, fmt.Sprintf("solution files are [%s], the lab's editable files are [%s]", strings.Join(have, " "), strings.Join(want, " ")))
	}
	_ = filepath.WalkDir(ws.abs(solDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(ws.root, p)
			problems = append(problems, filepath.ToSlash(rel)+": solutions have no tests (the lab's tests are the spec)")
		}
		return nil
	})
	if _, err := os.Stat(ws.abs(path.Join(solDir, "NOTES.md"))); err != nil {
		problems = append(problems, solDir+"/NOTES.md is missing")
	}
	if len(files) == 0 {
		return nil, problems
	}
	return files, problems
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

// verifySolution runs the lab's tests against the solution: -race (when
// available) and -count=3.
func (ws *workspace) verifySolution(ctx context.Context, r *report, l lab, info labInfo, editable []string, solFiles map[string]string, tmp string, race bool) {
	overlay, err := writeOverlay(tmp, "solution.json", ws.solutionOverlay(editable, solFiles))
	what := l.Name + " clause 4: the solution passes every test (-count=3"
	args := append(overlayArgs(overlay), "-count=3")
	if race {
		what += ", -race"
		args = append(args, "-race")
	}
	what += ")"
	if err != nil {
		r.fail(what, err.Error(), nil)
		return
	}
	run, res := ws.goTest(ctx, solutionTestTimeout, append(args, l.Pattern())...)
	o := ws.outcome(info, run, res)
	if o.compileErrs != nil {
		r.fail(what, "the solution does not compile", o.compileErrs)
		return
	}
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
		r.fail(what, "tests fail against the reference solution", problems)
		return
	}
	r.ok(what)
}

// verifyMutants applies each mutant to the solution, overlays the result
// on the lab and requires the mutant's step to fail.
func (ws *workspace) verifyMutants(ctx context.Context, r *report, l lab, info labInfo, editable []string, solFiles map[string]string, tmp string) {
	dir, mutants, problems := ws.labMutants(l)
	if len(problems) > 0 {
		r.fail(l.Name+" clause 5: mutants", "malformed mutants", problems)
	}
	if len(mutants) == 0 {
		if len(problems) == 0 {
			r.fail(l.Name+" clause 5: mutants", "no mutants in "+dir, []string{"every pitfall of the lab needs a mutant: " + dir + "/<pitfall>" + mutantExt})
		}
		return
	}
	refs, err := readReferences(solFiles)
	if err != nil {
		r.fail(l.Name+" clause 5: mutants", err.Error(), nil)
		return
	}
	for _, m := range mutants {
		if ctx.Err() != nil {
			return
		}
		what := fmt.Sprintf("%s clause 5: mutant %s is caught by step %d", l.Name, m.Name, m.Step)
		o, problems := ws.runMutant(ctx, l, info, editable, solFiles, refs, m, tmp, "-count=1")
		switch {
		case problems != nil:
			r.fail(what, "the mutant does not apply to the reference", problems)
		case o.compileErrs != nil:
			r.fail(what, "the mutant does not compile", o.compileErrs)
		default:
			if why, detail := mutantVerdict(o, m); why != "" {
				r.fail(what, why, detail)
			} else {
				r.ok(what)
			}
		}
	}
}

// runMutant applies m to the references, overlays the solution and the
// edited files on the lab, and runs the lab's tests with the extra flags.
// It returns the problems when the mutant does not apply.
func (ws *workspace) runMutant(ctx context.Context, l lab, info labInfo, editable []string, solFiles map[string]string, refs map[string][]byte, m mutant, tmp string, flags ...string) (labOutcome, []string) {
	rel := path.Join("solutions", l.Name, "mutants", m.Name+mutantExt)
	written, problems := writeMutant(filepath.Join(tmp, "mutants", m.Name), rel, m, refs)
	if problems != nil {
		return labOutcome{}, problems
	}
	replace := ws.solutionOverlay(editable, solFiles)
	for _, f := range editable {
		if p, ok := written[path.Base(f)]; ok {
			replace[ws.abs(f)] = p
		}
	}
	overlay, err := writeOverlay(tmp, "mutant-"+m.Name+".json", replace)
	if err != nil {
		return labOutcome{}, []string{err.Error()}
	}
	run, res := ws.goTest(ctx, labTestTimeout, append(append(overlayArgs(overlay), flags...), l.Pattern())...)
	return ws.outcome(info, run, res), nil
}

// mutantVerdict says why a mutant's run does not show it caught by its
// step ("" when it is caught).
func mutantVerdict(o labOutcome, m mutant) (string, []string) {
	var failing []string
	for _, s := range o.steps {
		if s.N == m.Step && len(s.Failed) > 0 {
			return "", nil
		}
		if s.State == stepFailing || s.State == stepNotRun {
			failing = append(failing, fmt.Sprint(s.N))
		}
	}
	if len(failing) == 0 {
		return "every test passes against the mutant", []string{fmt.Sprintf("step %d needs an assertion this mutant fails", m.Step)}
	}
	return fmt.Sprintf("step %d passes against the mutant (failing instead: step %s)", m.Step, strings.Join(failing, ", ")), nil
}

// importProblems lists imports of other labs or of solutions (clause 10).
func (ws *workspace) importProblems(ctx context.Context, l lab, overlay string) []string {
	args := append([]string{"list", "-e", "-json"}, overlayArgs(overlay)...)
	res := ws.goCmd(ctx, 2*time.Minute, append(args, l.Pattern())...)
	if res.err != nil {
		return append([]string{"go list failed"}, res.combined()...)
	}
	var pkg struct {
		ImportPath                               string
		Imports, TestImports, XTestImports, Deps []string
	}
	if err := json.Unmarshal(res.stdout, &pkg); err != nil {
		return []string{"go list: " + err.Error()}
	}
	labs, sols := ws.module+"/labs/", ws.module+"/solutions"
	var problems []string
	seen := map[string]bool{}
	for _, list := range [][]string{pkg.Imports, pkg.TestImports, pkg.XTestImports, pkg.Deps} {
		for _, imp := range list {
			bad := (strings.HasPrefix(imp, labs) && imp != pkg.ImportPath) || imp == sols || strings.HasPrefix(imp, sols+"/")
			if bad && !seen[imp] {
				seen[imp] = true
				problems = append(problems, "imports "+imp)
			}
		}
	}
	return problems
}

// readmeProblems checks the README's sections and step headings.
func (ws *workspace) readmeProblems(info labInfo) []string {
	if _, err := os.Stat(ws.abs(path.Join(info.Dir(), "README.md"))); err != nil {
		return []string{info.Dir() + "/README.md is missing"}
	}
	var problems []string
	if missing := missingSections(info.Readme.Sections); len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("missing or out of order: ## %s (want, in order: %s; found: %s)",
			strings.Join(missing, ", ## "), strings.Join(readmeSections, ", "), strings.Join(info.Readme.Sections, ", ")))
	}
	testSteps := map[int]bool{}
	for _, t := range info.Tests.Tests {
		if n := stepOf(t); n > 0 {
			testSteps[n] = true
		}
	}
	for _, n := range info.Steps {
		_, inReadme := info.Readme.Steps[n]
		switch {
		case testSteps[n] && !inReadme:
			problems = append(problems, fmt.Sprintf("no \"### Step %d: title\" heading under ## Steps", n))
		case !testSteps[n] && inReadme:
			problems = append(problems, fmt.Sprintf("\"### Step %d\" has no TestStep%d test", n, n))
		}
	}
	return problems
}

// verifyProject runs go vet, gofmt and go test on everything but the labs.
func (ws *workspace) verifyProject(ctx context.Context, r *report, race bool) error {
	res := ws.goCmd(ctx, 2*time.Minute, "list", "-e", "-f", "{{.ImportPath}}", "./...")
	if res.err != nil {
		r.fail("go list ./...", "go list failed", res.combined())
		return ctx.Err()
	}
	var vetPkgs, testPkgs []string
	for _, p := range strings.Fields(string(res.stdout)) {
		if under(p, ws.module+"/labs") {
			continue
		}
		vetPkgs = append(vetPkgs, p)
		if !under(p, ws.module+"/solutions") {
			testPkgs = append(testPkgs, p)
		}
	}

	// go vet.
	what := fmt.Sprintf("go vet (%d packages outside labs/)", len(vetPkgs))
	if len(vetPkgs) > 0 {
		res := ws.goCmd(ctx, 10*time.Minute, append([]string{"vet"}, vetPkgs...)...)
		if res.err != nil {
			r.fail(what, "go vet found problems", res.combined())
		} else {
			r.ok(what)
		}
	} else {
		r.ok(what)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	// gofmt.
	files, problems := ws.gofmtProblems(ctx)
	r.check(fmt.Sprintf("gofmt (%d files outside labs/ and testdata)", files), problems)

	// go test.
	if len(testPkgs) == 0 {
		r.note("no packages to test outside labs/ and solutions/")
		return ctx.Err()
	}
	args := []string{}
	flags := ""
	if race {
		args = append(args, "-race")
		flags = " -race"
	}
	run, res := ws.goTest(ctx, projectTestTimeout, append(args, testPkgs...)...)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	failedBefore := r.failed
	for _, p := range testPkgs {
		pkg := run.Packages[p]
		if pkg == nil || pkg.Action == "skip" {
			continue // never started (reported below) or no test files
		}
		what := "go test" + flags + " " + p
		switch {
		case pkg.BuildFailed:
			r.fail(what, "does not compile", pkg.buildErrors())
		case pkg.Action == "pass":
			r.ok(what)
		default:
			var detail []string
			names := make([]string, 0, len(pkg.Tests))
			for n := range pkg.Tests {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				t := pkg.Tests[n]
				if t.Action == "fail" || t.Action == "" {
					detail = append(detail, n+" failed:")
					for _, line := range firstLines(t.failureLines(), 8) {
						detail = append(detail, "    "+line)
					}
				}
			}
			if len(detail) == 0 {
				detail = pkg.Output
			}
			r.fail(what, "tests fail", detail)
		}
	}
	// go test failed, but no package's result says why (it stopped before
	// some packages started, say): that is a failure too, never a pass.
	if res.err != nil && r.failed == failedBefore {
		detail := append(append([]string{res.err.Error()}, run.Other...), splitLines(string(res.stderr))...)
		r.fail("go test"+flags+" (project)", "go test failed", detail)
	}
	return nil
}

// browserTestDir is the nested module of the browser tests: it has its own
// go.mod, so learners never download chromedp.
const browserTestDir = "internal/browsertest"

// chromiumNames are the commands the browser tests can drive.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// verifyBrowser runs the browser tests of browserTestDir when a Chromium
// is installed, and says how to enable them when not.
func (ws *workspace) verifyBrowser(ctx context.Context, r *report) error {
	if _, err := os.Stat(filepath.Join(ws.root, browserTestDir, "go.mod")); err != nil {
		return nil
	}
	found := ""
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			found = p
			break
		}
	}
	if found == "" {
		r.note("browser tests skipped: no Chromium on PATH (" + strings.Join(chromiumNames, ", ") +
			"); on Debian, apt-get install chromium enables them")
		return nil
	}
	what := "browser tests (" + browserTestDir + ", " + filepath.Base(found) + ")"
	res := ws.goCmd(ctx, 15*time.Minute, "-C", browserTestDir, "test", "-count=1", "-timeout", "10m", "./...")
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if res.err != nil {
		r.fail(what, "tests fail", res.combined())
		return nil
	}
	r.ok(what)
	return nil
}

// under reports whether import path p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// gofmtProblems runs gofmt -l over the .go files outside labs/ and testdata
// directories; it returns how many files it checked.
func (ws *workspace) gofmtProblems(ctx context.Context) (int, []string) {
	env, err := ws.goEnv(ctx, "GOROOT")
	if err != nil {
		return 0, []string{err.Error()}
	}
	gofmt := filepath.Join(env["GOROOT"], "bin", "gofmt")
	if runtime.GOOS == "windows" {
		gofmt += ".exe"
	}
	var files []string
	err = filepath.WalkDir(ws.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws.root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (rel == "labs" || base == "testdata" || base == "vendor" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return 0, []string{err.Error()}
	}
	var problems []string
	const batch = 100
	for start := 0; start < len(files); start += batch {
		part := files[start:min(start+batch, len(files))]
		args := []string{"-l"}
		for _, f := range part {
			args = append(args, filepath.FromSlash(f))
		}
		res := ws.runCmd(ctx, 2*time.Minute, gofmt, args...)
		for _, line := range splitLines(string(res.stdout)) {
			problems = append(problems, filepath.ToSlash(line)+" is not gofmt'ed (run gofmt -w "+line+")")
		}
		if res.err != nil {
			problems = append(problems, splitLines(string(res.stderr))...)
		}
	}
	return len(files), problems
}
