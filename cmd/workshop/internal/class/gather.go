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
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// Gather merges learners' `status -json` files into a class table:
//
//	go run ./cmd/workshop gather [-csv out.csv] [-labs 01,03,05] FILE|DIR...
//
// It is GatherAt with the computer's clock.
func Gather(args []string, stdout, stderr io.Writer) error {
	return GatherAt(time.Now, args, stdout, stderr)
}

// GatherAt is Gather with ages measured from now() (called once), which
// tests fix so that the table does not depend on the day it is printed.
//
// A directory stands for the .json files directly in it and those one
// level down, in each of its subdirectories: a GitHub Classroom export,
// one directory per learner's repository (DIR/assignment-alice/results.json),
// as well as a directory of files. Deeper directories are not read, nor
// subdirectories whose name starts with "." (.git); other files are
// ignored; a subdirectory without a .json file is noted on stderr (a
// learner who has not handed one in) and does not change the exit status.
// Each file must be a results.json of version 3 (Results); steps are
// grouped into labs by task_id.
//
// The table on stdout has one row per file: the learner, one cell per lab
// ("3/4": steps passed / steps; "build error": every step of the lab is
// "error", i.e. it does not compile; "-": the file has no step of that
// lab), the total over the labs in that file (a lab that does not compile
// counts its steps as not passed), "stuck at", "since last pass" and the
// file's ran_at; when a file has a lab's score (Results.Scores: lab 10's
// score card), a column "10 score" follows the labs, "-" for a file
// without one; a last row counts, per lab, the learners who passed every
// step.
//
// "stuck at" is the learner's first step that does not pass: the lowest
// task_id, then the lowest step, as "03 step 2", or "03 build error" when
// that lab does not compile; "done" when every step passes, "-" when the
// file has no step. With -labs 01,03,05,06,10 (the agenda's labs) only
// those labs count: a learner who finished 01 and 03 of a half day that
// skips 02 is stuck at 05, not at "02 step 1", and "done" once every step
// of the agenda passes. A -labs that is not lab numbers, each once, is a
// usage error. "since last pass" is how long before now the newest
// ran_at among the passing steps is, rounded down: "just now" (under a
// minute, or in the future: a learner's clock ahead of this one), "12
// min", "2 h 5 min", "3 d"; "never" when no step passes, "unknown" when
// passing steps carry no ran_at. A step's ran_at is when its tests last
// ran, not when it first passed: status runs a lab again unless its
// status cache holds a run of the lab as it is now (that lab then keeps
// the times of that run), and go's test cache replays a result with the
// time of the replay. So the age is the time since the learner last ran
// a changed lab that has a passing step: a learner editing such a lab
// looks recent without passing anything new.
//
// -csv writes the same rows, with a header, as CSV; its cells say "3 of
// 4", not "3/4", which spreadsheets would read as a date. After ran_at
// come stuck_at (as in the table) and last_pass_at: the ran_at of the last
// passing step, RFC 3339 in UTC, "" when there is none. The CSV carries
// that time and not an age, which would be stale by the time the file is
// read. Text from a learner's file is cleaned of control characters, and a
// cell that begins with = + - @, a tab or a carriage return is prefixed
// with an apostrophe, so that a spreadsheet does not read it as a formula.
//
// A row is named by the file's learner field, else, for a file called
// results.json, by the name of its directory, else by the file's name
// without .json. When several files carry the same learner name, each of
// their rows is named "name (path)" and a note on stderr says so: two
// learners with the same user name both stay visible, and the instructor
// sees whose file is whose. The same path given twice counts once.
//
// A file that cannot be read or is not a results.json of version 3, or a
// directory with no .json file directly in it or one level down, is named
// on stderr with what is wrong; the table of the others is printed and
// gather returns repo.ErrFailed (exit 1). A usage error is a
// *repo.UsageError.
func GatherAt(now func() time.Time, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gather", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	csvOut := fs.String("csv", "", "also write the table as CSV to `file`")
	agendaFlag := fs.String("labs", "", "the agenda's labs, as 01,03,05: where a learner is stuck among them only")
	var paths []string
	for { // flags may come before, between or after the files
		if err := fs.Parse(args); err != nil {
			return repo.BadUsage("gather: %v (gather [-csv out.csv] [-labs 01,03,05] FILE|DIR...)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) == 0 {
		return repo.BadUsage("gather needs the learners' status -json files, or a directory of them: gather [-csv out.csv] [-labs 01,03,05] FILE|DIR...")
	}
	agenda, err := parseAgenda(*agendaFlag)
	if err != nil {
		return repo.BadUsage("gather -labs %q: %v", *agendaFlag, err)
	}
	files, notes, bad := expandResultPaths(paths)
	for _, note := range notes {
		fmt.Fprintf(stderr, "gather: %s\n", note)
	}
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
	if len(agenda) > 0 {
		for _, r := range rows {
			r.stuck = stuckAt(onAgenda(r.steps, agenda), r.labs)
		}
	}
	for _, name := range nameRows(rows) {
		fmt.Fprintf(stderr, "gather: several files name the learner %q; their rows carry the file's path (status -json -name NAME tells learners apart)\n", name)
	}
	t := newClassTable(rows)
	if err := t.print(stdout, now()); err != nil {
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

// parseAgenda reads -labs: lab numbers separated by commas ("01,03,05",
// or "1,3,5"), each from 1 to 99 and given once; "" is no agenda.
func parseAgenda(s string) (map[int]bool, error) {
	if s == "" {
		return nil, nil
	}
	agenda := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 99 {
			return nil, fmt.Errorf("%q is no lab number; give the agenda's labs as numbers, 01,03,05,06,10", f)
		}
		if agenda[n] {
			return nil, fmt.Errorf("lab %02d is given twice", n)
		}
		agenda[n] = true
	}
	return agenda, nil
}

// onAgenda returns the steps of the agenda's labs.
func onAgenda(steps []stepEntry, agenda map[int]bool) []stepEntry {
	var out []stepEntry
	for _, e := range steps {
		if agenda[e.task] {
			out = append(out, e)
		}
	}
	return out
}

// expandResultPaths replaces each directory by the .json files in it and
// in its subdirectories (one level down, not those named .*), and drops
// paths seen before; notes name the subdirectories without a .json file.
func expandResultPaths(paths []string) (files, notes []string, bad []error) {
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
		found, subdirs, err := jsonFiles(p)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		n := len(found)
		for _, f := range found {
			add(f)
		}
		for _, sub := range subdirs {
			inSub, _, err := jsonFiles(sub)
			switch {
			case err != nil:
				bad = append(bad, err)
			case len(inSub) == 0:
				notes = append(notes, fmt.Sprintf("%s: no .json file in it, skipped (a learner who has not handed in results.json?)", sub))
			}
			n += len(inSub)
			for _, f := range inSub {
				add(f)
			}
		}
		if n == 0 {
			bad = append(bad, fmt.Errorf("%s: a directory without .json files (in it or one level down)", p))
		}
	}
	return files, notes, bad
}

// jsonFiles returns the .json files directly in dir and its
// subdirectories whose name does not start with ".", each as dir joined
// with its name, in name order.
func jsonFiles(dir string) (files, subdirs []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		switch {
		case e.IsDir() && !strings.HasPrefix(e.Name(), "."):
			subdirs = append(subdirs, filepath.Join(dir, e.Name()))
		case !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".json"):
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, subdirs, nil
}

// resultsDirName returns the name of the directory holding file when the
// file is called results.json (as in a GitHub Classroom export, one
// directory per learner's repository), else "".
func resultsDirName(file string) string {
	if !strings.EqualFold(filepath.Base(file), "results.json") {
		return ""
	}
	dir := filepath.Dir(file)
	if abs, err := filepath.Abs(file); err == nil {
		dir = filepath.Dir(abs)
	}
	if name := filepath.Base(dir); name != "." && name != string(filepath.Separator) {
		return name
	}
	return ""
}

// learnerRow is one results file, summarised by lab.
type learnerRow struct {
	file    string
	learner string // the learner field, else the file name without .json
	name    string // the row's name in the table (learner, made unique)
	ranAt   string
	labs    map[int]*labCell // by task_id
	scores  map[int]int      // by task_id: the score a lab's experiment printed (yours, 0-100)

	steps    []stepEntry
	stuck    string    // stuckAt: "03 step 2", "done"...
	passes   bool      // some step passes
	lastPass time.Time // the newest ran_at of a passing step; zero when none has one
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
