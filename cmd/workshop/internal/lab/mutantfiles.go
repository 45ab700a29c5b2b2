package lab

import (
	"bytes"
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// Reading a lab's mutants, and writing a mutant's edited files for a run.

// Mutants reads every mutant of a lab, sorted by name. A file or
// directory in the mutants directory that is not a .txtar file is a problem,
// and so is a mutant that does not parse; mutants holds only those that do.
func Mutants(ws *repo.Workspace, l Lab) (dir string, mutants []Mutant, problems []string) {
	dir = path.Join("solutions", l.Name, "mutants")
	entries, err := os.ReadDir(ws.Abs(dir))
	if err != nil {
		return dir, nil, []string{fmt.Sprintf("no mutants directory %s: every pitfall of the lab needs a mutant, %s/<pitfall>%s", dir, dir, MutantExt)}
	}
	for _, e := range entries {
		rel := path.Join(dir, e.Name())
		if e.IsDir() || !strings.HasSuffix(e.Name(), MutantExt) {
			problems = append(problems, fmt.Sprintf("%s is not a mutant: a mutant is one file <pitfall>%s of edits of the reference", rel, MutantExt))
			continue
		}
		data, err := os.ReadFile(ws.Abs(rel))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		name := strings.TrimSuffix(e.Name(), MutantExt)
		if !mutantName.MatchString(name) {
			problems = append(problems, fmt.Sprintf("%s: name a mutant in lower case, words joined by dashes (like counts-404s%s; dots may join digits)", rel, MutantExt))
			continue
		}
		m, err := ParseMutant(name, data)
		if err != nil {
			problems = append(problems, rel+": "+err.Error())
			continue
		}
		mutants = append(mutants, m)
	}
	return dir, mutants, problems
}

// StepProblem says why m's step cannot catch it (not one of the lab's
// steps, or the experiment), or "".
func (m Mutant) StepProblem(info Info) string {
	if slices.Contains(info.ExperimentSteps(), m.Step) {
		return fmt.Sprintf("the mutant names step %d, lab %s's experiment: the experiment measures and does not run against mutants; name the step whose assertion catches it", m.Step, info.Num())
	}
	if slices.Contains(info.Steps, m.Step) {
		return ""
	}
	last := 0
	if n := len(info.Steps); n > 0 {
		last = info.Steps[n-1]
	}
	return fmt.Sprintf("the mutant names step %d, but lab %s has steps 1 to %d (its ### Step N headings and TestStep<N> tests)", m.Step, info.Num(), last)
}

// ReadReferences reads the solution's files (base name -> path).
func ReadReferences(solFiles map[string]string) (map[string][]byte, error) {
	refs := map[string][]byte{}
	for base, p := range solFiles {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		refs[base] = data
	}
	return refs, nil
}

// WriteMutant applies m to the references and writes the edited files
// under dir; it returns base name -> written path.
func WriteMutant(dir, rel string, m Mutant, refs map[string][]byte) (map[string]string, []string) {
	edited, problems := m.Apply(rel, refs)
	if len(problems) > 0 {
		return nil, problems
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, []string{err.Error()}
	}
	written := map[string]string{}
	for base, data := range edited {
		p := filepath.Join(dir, base)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, []string{err.Error()}
		}
		written[base] = p
	}
	return written, nil
}

// ChangesNothing reports whether every edited file (base name -> path)
// has the same Go tokens as its reference: only comments or spacing
// changed.
func ChangesNothing(written map[string]string, refs map[string][]byte) bool {
	for base, p := range written {
		data, err := os.ReadFile(p)
		if err != nil || !slices.Equal(goTokens(data), goTokens(refs[base])) {
			return false
		}
	}
	return true
}

// goTokens returns src's tokens without comments and without the
// semicolons the scanner inserts at line ends, as "token literal".
func goTokens(src []byte) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	s.Init(file, src, nil, 0)
	var toks []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return toks
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue // inserted at a line end: spacing, not code
		}
		toks = append(toks, tok.String()+" "+lit)
	}
}

// HasCRLF reports whether data has a CRLF line ending.
func HasCRLF(data []byte) bool { return bytes.Contains(data, []byte("\r\n")) }
