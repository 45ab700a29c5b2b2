package lab

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A mutant is one pitfall of a lab written as edits of the lab's reference
// solution: the bug a hurried learner would write, which one step of the
// lab's tests must catch. Its file, solutions/NN-name/mutants/<pitfall>.txtar,
// has txtar's layout (a free-text comment, then sections that each start
// with a "-- name --" line):
//
//	A call whose caller gave up counts as a success, so an abandoned trial
//	closes the breaker on a dependency that may still be down.
//	Caught by step 3.
//	-- old breaker.go --
//		if errors.Is(err, context.Canceled) {
//			return
//		}
//	-- new breaker.go --
//
// The comment says what is wrong and ends with the line "Caught by step N."
// (or "Caught by step N under -race." for a data race, which only the race
// detector sees: verify then runs the lab's tests with -race, where the
// race detector is available, and skips the mutant with a note elsewhere).
// Sections come in pairs: "-- old F --" holds whole lines of the reference
// file F (one of the lab's editable files, by base name) and the
// "-- new F --" right after it holds the lines that replace them (nothing,
// to delete them). A mutant may have several pairs, for one file or more.
// Each old snippet must occur exactly once in the current reference, at the
// start of a line, and the snippets of one file must not overlap; line
// endings are normalised to LF on both sides. So a change to a reference
// either carries its mutants along or makes verify name the mutant and the
// snippet that no longer fits.
type Mutant struct {
	Name    string // the file name without .txtar: the pitfall's short name
	Pitfall string // the comment without its last line, on one line
	Step    int    // the step whose tests must fail
	Race    bool   // "Caught by step N under -race.": a data race, which only the race detector sees
	Edits   []edit
}

// edit replaces one snippet of one reference file.
type edit struct {
	File     string // base name of the lab's editable file
	Old, New string // whole lines, each ending in "\n" (New may be empty)
	Line     int    // line of the "-- old F --" marker in the .txtar file
}

// MutantExt is the extension of mutant files.
const MutantExt = ".txtar"

var (
	mutantName   = regexp.MustCompile(`^[a-z0-9]+([-.][a-z0-9]+)*$`)
	mutantMarker = regexp.MustCompile(`^-- (old|new) (\S+) --$`)
	mutantCaught = regexp.MustCompile(`^Caught by step ([0-9]+)( under -race)?\.?$`)
)

// ParseMutant reads a mutant file; name is its base name without .txtar.
func ParseMutant(name string, data []byte) (Mutant, error) {
	m := Mutant{Name: name}
	text := NormalizeEOL(string(data))
	text = strings.TrimPrefix(text, "\ufeff")
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first := len(lines)
	for i, line := range lines {
		if strings.HasPrefix(line, "-- ") {
			first = i
			break
		}
	}
	var comment []string
	for _, line := range lines[:first] {
		if s := strings.TrimSpace(line); s != "" {
			comment = append(comment, s)
		}
	}
	if len(comment) < 2 {
		return m, fmt.Errorf(`the comment must say what is wrong, then end with the line "Caught by step N."`)
	}
	c := mutantCaught.FindStringSubmatch(comment[len(comment)-1])
	if c == nil {
		return m, fmt.Errorf(`the comment's last line is %q, want "Caught by step N."`, comment[len(comment)-1])
	}
	step, err := strconv.Atoi(c[1])
	if err != nil || step == 0 || step > 99 {
		return m, fmt.Errorf("step %s does not exist: steps count from 1", c[1])
	}
	m.Step = step
	m.Race = c[2] != ""
	m.Pitfall = strings.Join(comment[:len(comment)-1], " ")

	type section struct {
		kind, file string
		line       int
		body       strings.Builder
	}
	var sections []*section
	for i := first; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "-- ") {
			mm := mutantMarker.FindStringSubmatch(strings.TrimRight(line, "\n"))
			if mm == nil {
				return m, fmt.Errorf(`line %d: %q is not "-- old FILE --" or "-- new FILE --" (a snippet line cannot begin with "-- ")`, i+1, strings.TrimRight(line, "\n"))
			}
			sections = append(sections, &section{kind: mm[1], file: mm[2], line: i + 1})
			continue
		}
		sections[len(sections)-1].body.WriteString(line)
	}
	if len(sections) == 0 {
		return m, fmt.Errorf(`no edits: add an "-- old FILE --" and a "-- new FILE --" section`)
	}
	for i := 0; i < len(sections); i += 2 {
		old := sections[i]
		if old.kind != "old" {
			return m, fmt.Errorf(`line %d: "-- new %s --" must follow an "-- old %s --" section`, old.line, old.file, old.file)
		}
		if i+1 == len(sections) || sections[i+1].kind != "new" || sections[i+1].file != old.file {
			return m, fmt.Errorf(`line %d: "-- old %s --" must be followed by "-- new %s --"`, old.line, old.file, old.file)
		}
		if strings.TrimSpace(old.body.String()) == "" {
			return m, fmt.Errorf("line %d: the old snippet of %s is empty: quote the lines to replace", old.line, old.file)
		}
		e := edit{File: old.file, Old: old.body.String(), New: sections[i+1].body.String(), Line: old.line}
		if e.Old == e.New {
			return m, fmt.Errorf("line %d: the old and new snippets of %s are the same", old.line, old.file)
		}
		m.Edits = append(m.Edits, e)
	}
	return m, nil
}

// Files returns the base names of the files the mutant edits, sorted.
func (m Mutant) Files() []string {
	var files []string
	for _, e := range m.Edits {
		if !slices.Contains(files, e.File) {
			files = append(files, e.File)
		}
	}
	sort.Strings(files)
	return files
}

// Apply applies the mutant's edits to the reference files (base name ->
// content) and returns the edited files. Every problem names the mutant's
// file (rel) and the snippet's line there.
func (m Mutant) Apply(rel string, refs map[string][]byte) (map[string][]byte, []string) {
	out := map[string][]byte{}
	var problems []string
	for _, file := range m.Files() {
		ref, ok := refs[file]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s edits %s, which is not one of the lab's editable files", rel, file))
			continue
		}
		text := NormalizeEOL(string(ref))
		type span struct {
			start, end int
			e          edit
		}
		var spans []span
		for _, e := range m.Edits {
			if e.File != file {
				continue
			}
			at := lineStarts(text, e.Old)
			if len(at) != 1 {
				problems = append(problems, fmt.Sprintf("%s:%d: %s", rel, e.Line, snippetProblem(text, file, e.Old, at)))
				continue
			}
			spans = append(spans, span{at[0], at[0] + len(e.Old), e})
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
		var b strings.Builder
		pos := 0
		for _, s := range spans {
			if s.start < pos {
				problems = append(problems, fmt.Sprintf("%s:%d: the old snippet overlaps another edit of %s", rel, s.e.Line, file))
				continue
			}
			b.WriteString(text[pos:s.start])
			b.WriteString(s.e.New)
			pos = s.end
		}
		b.WriteString(text[pos:])
		out[file] = []byte(b.String())
	}
	return out, problems
}

// snippetProblem says why an old snippet does not occur exactly once in
// the reference text (at lists where it does occur): where it occurs
// twice, the lines; where it does not occur, the first of its lines that
// the reference lacks, and the reference line that differs from it only
// in spaces and tabs, if any. Whitespace is shown as Go quotes it.
func snippetProblem(text, file, old string, at []int) string {
	lineOf := func(offset int) int { return strings.Count(text[:offset], "\n") + 1 }
	if len(at) > 1 {
		var lines []string
		for _, a := range at {
			lines = append(lines, fmt.Sprint(lineOf(a)))
		}
		return fmt.Sprintf("the old snippet occurs %d times in %s (lines %s), want exactly once: add a neighbouring line to make it unique",
			len(at), file, strings.Join(lines, ", "))
	}
	ref := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	snippet := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	// The first snippet line that is no whole line of the reference, or
	// the first that breaks the run of consecutive lines.
	for i, want := range snippet {
		if !slices.Contains(ref, want) {
			msg := fmt.Sprintf("the old snippet does not occur in %s: its line %d, %q, is not a whole line of %s", file, i+1, want, file)
			for n, have := range ref {
				if strings.Join(strings.Fields(have), " ") == strings.Join(strings.Fields(want), " ") {
					return msg + fmt.Sprintf("; %s:%d, %q, differs only in spaces or tabs (whole lines count, indentation and trailing spaces included)", file, n+1, have)
				}
			}
			return msg + " (snippets are whole lines, copied exactly; has the reference changed?)"
		}
	}
	return fmt.Sprintf("the old snippet does not occur in %s: each of its lines does, but not one after the other as in the snippet (%d lines, starting %q)", file, len(snippet), snippet[0])
}

// lineStarts returns the offsets at which snippet occurs in text at the
// start of a line.
func lineStarts(text, snippet string) []int {
	var at []int
	for i := 0; ; {
		j := strings.Index(text[i:], snippet)
		if j < 0 {
			return at
		}
		if k := i + j; k == 0 || text[k-1] == '\n' {
			at = append(at, k)
		}
		i += j + 1
	}
}

// NormalizeEOL turns CRLF line endings into LF.
func NormalizeEOL(s string) string {
	return strings.ReplaceAll(s, "\r\n", "\n")
}
