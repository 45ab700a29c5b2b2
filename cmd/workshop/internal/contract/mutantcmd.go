package contract

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/learner"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/pmezard/go-difflib/difflib"
)

// Mutant is "mutant NN [name]", for people writing labs: without a name
// it lists the lab's mutants; with one it prints the mutant as a unified
// diff against the reference and runs the lab's tests against it, every
// test but the experiment, as verify does (see runMutant).
func Mutant(ctx context.Context, ws *repo.Workspace, args []string) error {
	labs, err := lab.List(ws)
	if err != nil {
		return err
	}
	l, ok := lab.Find(labs, args[0])
	if !ok || !l.Present {
		return lab.NoLab(args[0], labs)
	}
	dir, mutants, problems := lab.Mutants(ws, l)
	w := ws.Stdout
	if len(args) == 1 {
		for _, p := range problems {
			fmt.Fprintf(ws.Stderr, "%s\n", p)
		}
		fmt.Fprintf(w, "%d mutants in %s:\n", len(mutants), dir)
		for _, m := range mutants {
			fmt.Fprintf(w, "  step %d  %-32s %s\n", m.Step, m.Name, m.Pitfall)
		}
		fmt.Fprintf(w, "\nShow one and run the lab's tests (but the experiment) against it: go run ./cmd/workshop mutant %s NAME\n", l.Num())
		if len(problems) > 0 {
			return repo.ErrFailed
		}
		return nil
	}
	// One mutant: only its own problems matter here.
	name := strings.TrimSuffix(path.Base(filepath.ToSlash(args[1])), lab.MutantExt)
	rel := path.Join(dir, name+lab.MutantExt)
	data, err := os.ReadFile(ws.Abs(rel))
	if err != nil {
		fmt.Fprintf(ws.Stderr, "no mutant %q: there is no %s (go run ./cmd/workshop mutant %s lists them)\n", name, rel, l.Num())
		return repo.ErrFailed
	}
	m, err := lab.ParseMutant(name, data)
	if err != nil {
		fmt.Fprintf(w, "%s: %v\n", rel, err)
		return repo.ErrFailed
	}
	info, err := lab.ReadInfo(ws, l)
	if err != nil {
		return err
	}
	editable, _, err := lab.Files(ws, l.Dir())
	if err != nil {
		return err
	}
	solFiles, layout := lab.SolutionLayout(ws, "solutions/"+l.Name, editable)
	if solFiles == nil {
		return fmt.Errorf("%s", strings.Join(layout, "; "))
	}
	refs, err := lab.ReadReferences(solFiles)
	if err != nil {
		return err
	}
	if p := m.StepProblem(info); p != "" {
		fmt.Fprintf(w, "%s: %s\n", rel, p)
		return repo.ErrFailed
	}
	edited, problems := m.Apply(rel, refs)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(w, p)
		}
		return repo.ErrFailed
	}
	fmt.Fprintf(w, "Mutant %s of lab %s: %s\nIt must be caught by step %d: %s.\n\n", m.Name, l.Num(), m.Pitfall, m.Step, info.StepTitle(m.Step))
	for _, file := range m.Files() {
		ref := "solutions/" + l.Name + "/" + file
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A:        difflib.SplitLines(lab.NormalizeEOL(string(refs[file]))),
			B:        difflib.SplitLines(string(edited[file])),
			FromFile: ref,
			ToFile:   ref + " (mutant " + m.Name + ")",
			Context:  3,
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, diff)
	}
	tmp, err := os.MkdirTemp("", "workshop-mutant-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(w, "Running go test -count=1 %s (every step but the experiment) against the reference, then against the mutant ...\n\n", l.Pattern())
	refPassed, refErrs := referencePassed(ctx, ws, info, editable, solFiles, tmp)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if refErrs != nil {
		fmt.Fprintln(w, "The reference solution does not compile:")
		for _, line := range repo.FirstLines(refErrs, 20) {
			fmt.Fprintf(w, "    %s\n", line)
		}
		return repo.ErrFailed
	}
	flags := []string{"-count=1"}
	if m.Race {
		if !ws.RaceAvailable(ctx) {
			fmt.Fprintln(w, "This mutant is a data race, and the race detector is unavailable here (it needs cgo and a C compiler).")
			return repo.ErrFailed
		}
		flags = append(flags, "-race")
	}
	o, problems := runMutant(ctx, ws, l, info, editable, solFiles, refs, m, tmp, flags...)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if problems != nil {
		for _, p := range problems {
			fmt.Fprintln(w, p)
		}
		return repo.ErrFailed
	}
	if o.CompileErrs != nil {
		fmt.Fprintln(w, "The mutant does not compile:")
		for _, line := range repo.FirstLines(o.CompileErrs, 20) {
			fmt.Fprintf(w, "    %s\n", line)
		}
		return repo.ErrFailed
	}
	learner.PrintSteps(w, ws.Root, info.WithoutExperiment(), o)
	fmt.Fprintln(w)
	why, detail, also := mutantVerdict(o, m, refPassed)
	if why != "" {
		fmt.Fprintf(w, "NOT CAUGHT: %s\n", why)
		for _, line := range detail {
			fmt.Fprintf(w, "    %s\n", line)
		}
		return repo.ErrFailed
	}
	fmt.Fprintf(w, "Caught by step %d, as the mutant says%s.\n", m.Step, alsoFails(also))
	if problems := storyProblems(o.Steps); len(problems) > 0 {
		fmt.Fprintln(w, "\nBut these failures do not tell their story (clause 4: \"step N\" and a number, in the test's own words):")
		for _, p := range problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
		return repo.ErrFailed
	}
	return nil
}
