package main

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// mutants (clause 6) applies each mutant to the reference, overlays the
// result on the lab and requires the mutant's step to fail.
func (lr *labRun) mutants(ctx context.Context) error {
	if lr.solFiles == nil {
		return nil // clause 5 said why there is no reference
	}
	dir, mutants, problems := lr.ws.labMutants(lr.lab)
	if len(problems) > 0 {
		lr.fail(6, "mutants", "malformed mutants", problems)
	}
	if len(mutants) == 0 {
		if len(problems) == 0 {
			lr.fail(6, "mutants", "no mutants in "+dir, []string{"every pitfall of the lab needs a mutant: " + dir + "/<pitfall>" + mutantExt})
		}
		return nil
	}
	refs, err := readReferences(lr.solFiles)
	if err != nil {
		lr.fail(6, "mutants", err.Error(), nil)
		return nil
	}
	for _, m := range mutants {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		what := fmt.Sprintf("mutant %s is caught by step %d", m.Name, m.Step)
		if p := m.stepProblem(lr.info); p != "" {
			lr.fail(6, what, p, nil)
			continue
		}
		o, problems := lr.ws.runMutant(ctx, lr.lab, lr.info, lr.editable, lr.solFiles, refs, m, lr.tmp, "-count=1")
		switch {
		case problems != nil:
			lr.fail(6, what, "the mutant does not apply to the reference", problems)
		case o.compileErrs != nil:
			lr.fail(6, what, "the mutant does not compile", o.compileErrs)
		default:
			why, detail := mutantVerdict(o, m)
			if why != "" {
				lr.fail(6, what, why, detail)
			} else {
				lr.ok(6, what)
			}
		}
	}
	return nil
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
