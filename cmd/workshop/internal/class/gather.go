package class

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// Gather merges learners' `status -json` files into a class table:
//
//	go run ./cmd/workshop gather [-csv out.csv] FILE|DIR...
//
// A directory stands for the .json files directly in it. Each file must be
// a results.json of version 3 (Results); steps are grouped into labs by
// task_id. The table on stdout has one row per file: the learner, one cell
// per lab ("3/4": steps passed / steps; "build error": every step of the lab
// is "error", i.e. it does not compile; "-": the file has no step of that
// lab), the total over the labs in that file (a lab that does not compile
// counts its steps as not passed) and the file's ran_at; when a file has a
// lab's score (Results.Scores: lab 10's score card), a column "10
// score" follows the labs, "-" for a file without one; a last row counts,
// per lab, the learners who passed every step. -csv writes the same rows,
// with a header, as CSV; its cells say "3 of 4", not "3/4", which
// spreadsheets would read as a date.
//
// A row is named by the file's learner field, else by the file's name
// without .json. When several files carry the same learner name, each of
// their rows is named "name (path)" and a note on stderr says so: two
// learners with the same user name both stay visible, and the instructor
// sees whose file is whose. The same path given twice counts once.
//
// A file that cannot be read or is not a results.json of version 3 is named
// on stderr with what is wrong; the table of the others is printed and
// gather exits 1.
func Gather(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gather", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	csvOut := fs.String("csv", "", "also write the table as CSV to `file`")
	var paths []string
	for { // flags may come before, between or after the files
		if err := fs.Parse(args); err != nil {
			return repo.BadUsage("gather: %v (gather [-csv out.csv] FILE|DIR...)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) == 0 {
		return repo.BadUsage("gather needs the learners' status -json files, or a directory of them: gather [-csv out.csv] FILE|DIR...")
	}
	files, bad := expandResultPaths(paths)
	var rows []*learnerRow
	for _, f := range files {
		row, err := readLearnerRow(f)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		rows = append(rows, row)
	}
	for _, err := range bad {
		fmt.Fprintf(stderr, "gather: %v\n", err)
	}
	if len(rows) == 0 {
		if len(bad) == 0 {
			fmt.Fprintln(stderr, "gather: no results files")
		}
		return repo.ErrFailed
	}
	for _, name := range nameRows(rows) {
		fmt.Fprintf(stderr, "gather: several files name the learner %q; their rows carry the file's path (status -json -name NAME tells learners apart)\n", name)
	}
	t := newClassTable(rows)
	if err := t.print(stdout); err != nil {
		return err
	}
	if *csvOut != "" {
		var buf bytes.Buffer
		if err := t.writeCSV(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(*csvOut, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if len(bad) > 0 {
		return repo.ErrFailed
	}
	return nil
}

// expandResultPaths replaces each directory by the .json files in it and
// drops paths seen before.
func expandResultPaths(paths []string) (files []string, bad []error) {
	seen := map[string]bool{}
	add := func(p string) {
		key := filepath.Clean(p)
		if abs, err := filepath.Abs(p); err == nil {
			key = abs
		}
		if !seen[key] {
			seen[key] = true
			files = append(files, p)
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		if !fi.IsDir() {
			add(p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		n := 0
		for _, e := range entries {
			if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".json") {
				add(filepath.Join(p, e.Name()))
				n++
			}
		}
		if n == 0 {
			bad = append(bad, fmt.Errorf("%s: a directory without .json files", p))
		}
	}
	return files, bad
}

// learnerRow is one results file, summarised by lab.
type learnerRow struct {
	file    string
	learner string // the learner field, else the file name without .json
	name    string // the row's name in the table (learner, made unique)
	ranAt   string
	labs    map[int]*labCell // by task_id
	scores  map[int]int      // by task_id: the score a lab's experiment printed (yours, 0-100)
}

// labCell is one learner's steps of one lab.
type labCell struct {
	lab                  string // the lab field of its first step, if any
	steps, passed, error int
}

func (c *labCell) buildError() bool { return c.steps > 0 && c.error == c.steps }

func (c *labCell) done() bool { return c.steps > 0 && c.passed == c.steps }

// text returns the cell as the table shows it; of is the separator between
// steps passed and steps ("/" in the table, " of " in the CSV).
func (c *labCell) text(of string) string {
	switch {
	case c == nil:
		return ""
	case c.buildError():
		return "build error"
	}
	return strconv.Itoa(c.passed) + of + strconv.Itoa(c.steps)
}

// nameRows gives each row its name, the learner's, suffixed with the file's
// path when several files carry the same learner; it returns those learners.
func nameRows(rows []*learnerRow) (dups []string) {
	count := map[string]int{}
	for _, r := range rows {
		count[r.learner]++
	}
	for _, r := range rows {
		r.name = r.learner
		if count[r.learner] > 1 {
			r.name = fmt.Sprintf("%s (%s)", r.learner, r.file)
		}
	}
	for name, n := range count {
		if n > 1 {
			dups = append(dups, name)
		}
	}
	sort.Strings(dups)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return dups
}

// total returns a row's steps passed and steps over every lab.
func (r *learnerRow) total() (passed, steps int) {
	for _, c := range r.labs {
		passed += c.passed
		steps += c.steps
	}
	return passed, steps
}
