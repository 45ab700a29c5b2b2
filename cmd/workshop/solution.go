package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"slices"

	"github.com/pmezard/go-difflib/difflib"
)

// solution is "solution NN [-y]": the reference solution against the
// learner's files as a unified diff, then the reference's NOTES.md. Before
// the lab passes it says that this shows the answer and asks first
// (unless -y).
func (ws *workspace) solution(ctx context.Context, arg string, yes bool) error {
	labs, err := ws.listLabs()
	if err != nil {
		return err
	}
	l, ok := findLab(labs, arg)
	if !ok || !l.Present {
		return noLab(arg, labs)
	}
	info, err := ws.labInfo(l)
	if err != nil {
		return err
	}
	w := ws.stdout
	if !yes {
		p := newProgress(w)
		outcomes, err := ws.runLabs(ctx, []labInfo{info}, p, func(io.Writer, labOutcome, bool) {})
		if err != nil {
			return err
		}
		o := outcomes[l.Name]
		if !o.done() {
			state := fmt.Sprintf("%d of %d steps pass", o.passed(), len(o.steps))
			if o.compileErrs != nil {
				state = "it does not compile"
			}
			fmt.Fprintf(w, "Lab %s does not pass yet (%s). This shows the reference solution: the answer to every step.\n", l.Num(), state)
			fmt.Fprintf(w, "A hint is gentler: go run ./cmd/workshop hint %s\n", l.Num())
			if !ws.confirm("Show the answer anyway? [y/N] ") {
				fmt.Fprintln(w, "Nothing shown.")
				return nil
			}
		}
	}
	return ws.showSolution(w, l)
}

// showSolution prints the diff from the learner's files to the reference's
// and the reference's NOTES.md.
func (ws *workspace) showSolution(w io.Writer, l lab) error {
	editable, _, err := ws.labFiles(l.Dir())
	if err != nil {
		return err
	}
	solDir := "solutions/" + l.Name
	solFiles, problems := ws.solutionLayout(solDir, editable)
	if solFiles == nil {
		return fmt.Errorf("no reference solution for lab %s: %v", l.Num(), problems)
	}
	fmt.Fprintf(w, "Your code (-) against the reference solution (+), lab %s %s:\n\n", l.Num(), l.Title())
	for _, base := range sortedKeys(solFiles) {
		ref, err := os.ReadFile(solFiles[base])
		if err != nil {
			return err
		}
		mine, err := os.ReadFile(ws.abs(path.Join(l.Dir(), base)))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A:        difflib.SplitLines(normalizeEOL(string(mine))),
			B:        difflib.SplitLines(normalizeEOL(string(ref))),
			FromFile: path.Join(l.Dir(), base) + " (yours)",
			ToFile:   path.Join(solDir, base) + " (reference)",
			Context:  3,
		})
		if err != nil {
			return err
		}
		if diff == "" {
			fmt.Fprintf(w, "%s is the same as the reference.\n\n", base)
			continue
		}
		fmt.Fprintln(w, diff)
	}
	notes, err := os.ReadFile(ws.abs(path.Join(solDir, "NOTES.md")))
	if err == nil {
		fmt.Fprintf(w, "%s\n\n%s", path.Join(solDir, "NOTES.md"), normalizeEOL(string(notes)))
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
