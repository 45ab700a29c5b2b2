package learner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"slices"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/labrun"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/term"
	"github.com/pmezard/go-difflib/difflib"
)

// Solution is "solution NN [-y]": the reference solution against the
// learner's files as a unified diff, then the reference's NOTES.md. Before
// the lab passes it says that this shows the answer and asks first
// (unless -y).
func Solution(ctx context.Context, ws *repo.Workspace, arg string, yes bool) error {
	p := ws.P
	labs, err := lab.List(ws)
	if err != nil {
		return err
	}
	l, ok := lab.Find(labs, arg)
	if !ok || !l.Present {
		return lab.NoLab(arg, labs)
	}
	info, err := lab.ReadInfo(ws, l)
	if err != nil {
		return err
	}
	w := ws.Stdout
	if !yes {
		prog := term.New(w)
		outcomes, err := labrun.Run(ctx, ws, []lab.Info{info}, prog, func(io.Writer, lab.Outcome, bool) {})
		if err != nil {
			return err
		}
		o := outcomes[l.Name]
		if !o.Done() {
			state := p.Sprintf("%d of %d steps pass", o.Passed(), len(o.Steps))
			if o.CompileErrs != nil {
				state = p.Text("it does not compile")
			}
			p.Fprintf(w, "Lab %s does not pass yet (%s). This shows the reference solution: the answer to every step.\n", l.Num(), state)
			p.Fprintf(w, "A hint is gentler: go run ./cmd/workshop hint %s\n", l.Num())
			if !ws.Confirm(p.Text("Show the answer anyway? [y/N] ")) {
				p.Fprintln(w, "Nothing shown.")
				return nil
			}
		}
	}
	return showSolution(ws, w, l)
}

// showSolution prints the diff from the learner's files to the reference's
// and the reference's NOTES.md.
func showSolution(ws *repo.Workspace, w io.Writer, l lab.Lab) error {
	p := ws.P
	editable, _, err := lab.Files(ws, l.Dir())
	if err != nil {
		return err
	}
	solDir := "solutions/" + l.Name
	solFiles, problems := lab.SolutionLayout(ws, solDir, editable)
	if solFiles == nil {
		return p.Errorf("no reference solution for lab %s: %v", l.Num(), problems)
	}
	p.Fprintf(w, "Your code (-) against the reference solution (+), lab %s %s:\n\n", l.Num(), l.Title())
	for _, base := range sortedKeys(solFiles) {
		ref, err := os.ReadFile(solFiles[base])
		if err != nil {
			return err
		}
		mine, err := os.ReadFile(ws.Abs(path.Join(l.Dir(), base)))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A:        difflib.SplitLines(lab.NormalizeEOL(string(mine))),
			B:        difflib.SplitLines(lab.NormalizeEOL(string(ref))),
			FromFile: path.Join(l.Dir(), base) + " (yours)",
			ToFile:   path.Join(solDir, base) + " (reference)",
			Context:  3,
		})
		if err != nil {
			return err
		}
		if diff == "" {
			p.Fprintf(w, "%s is the same as the reference.\n\n", base)
			continue
		}
		fmt.Fprintln(w, diff)
	}
	notes, err := os.ReadFile(ws.Abs(path.Join(solDir, "NOTES.md")))
	if err == nil {
		p.Fprintf(w, "%s\n\n%s", path.Join(solDir, "NOTES.md"), lab.NormalizeEOL(string(notes)))
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
