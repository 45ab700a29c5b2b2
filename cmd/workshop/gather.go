package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// gather merges learners' `status -json` files into a class table:
//
//	go run ./cmd/workshop gather [-csv out.csv] FILE|DIR...
//
// A directory stands for the .json files directly in it. Each file must be
// a results.json of version 3 (classResults); steps are grouped into labs by
// task_id. The table on stdout has one row per file: the learner, one cell
// per lab ("3/4": steps passed / steps; "build error": every step of the lab
// is "error", i.e. it does not compile; "-": the file has no step of that
// lab), the total over the labs in that file (a lab that does not compile
// counts its steps as not passed) and the file's ran_at; when a file has a
// lab's score (classResults.Scores: lab 10's score card), a column "10
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
func gather(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gather", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	csvOut := fs.String("csv", "", "also write the table as CSV to `file`")
	var paths []string
	for { // flags may come before, between or after the files
		if err := fs.Parse(args); err != nil {
			return badUsage("gather: %v (gather [-csv out.csv] FILE|DIR...)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) == 0 {
		return badUsage("gather needs the learners' status -json files, or a directory of them: gather [-csv out.csv] FILE|DIR...")
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
		return errFailed
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
		return errFailed
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

// readLearnerRow reads and checks one results file; its errors name the file.
func readLearnerRow(file string) (*learnerRow, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	data, err = decodeText(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	r, err := parseResultsV3(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	ranAt := ""
	if r.RanAt != "" {
		at, err := time.Parse(time.RFC3339, r.RanAt)
		if err != nil {
			return nil, fmt.Errorf("%s: ran_at %q is not an RFC 3339 time", file, r.RanAt)
		}
		ranAt = at.UTC().Format(time.RFC3339)
	}
	row := &learnerRow{file: file, learner: cleanCell(r.Learner), ranAt: ranAt, labs: map[int]*labCell{}, scores: map[int]int{}}
	if err := checkScores(r); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for lab, sc := range r.Scores {
		id, _ := strconv.Atoi(lab[:2])
		row.scores[id] = sc.Yours
	}
	if row.learner == "" {
		row.learner = cleanCell(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
	}
	type stepOfLab struct{ task, step int }
	seen := map[stepOfLab]bool{}
	for _, t := range r.Tests {
		// A step listed twice counts once: a file cannot pass a lab by
		// repeating a step.
		key := stepOfLab{t.TaskID, t.Step}
		if t.Step == 0 {
			key.step = -len(seen) - 1 // no step number: every entry counts
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		c := row.labs[t.TaskID]
		if c == nil {
			c = &labCell{lab: cleanCell(t.Lab)}
			row.labs[t.TaskID] = c
		}
		c.steps++
		switch t.Status {
		case resultPass:
			c.passed++
		case resultError:
			c.error++
		}
	}
	return row, nil
}

// checkScores checks r's scores as gather relies on them: each is a lab's
// directory name that the file has steps of (the lab field of its
// tests), one name per lab number, three scores from 0 to 100 and a seed
// that is not negative. Decoding has already refused a score that is not
// a whole number.
func checkScores(r *classResults) error {
	labs := map[string]bool{}
	for _, t := range r.Tests {
		labs[t.Lab] = true
	}
	names := slices.Sorted(maps.Keys(r.Scores))
	byNumber := map[string]string{}
	for _, lab := range names {
		sc := r.Scores[lab]
		switch {
		case !labDirName.MatchString(lab):
			return fmt.Errorf("scores: %q is not a lab's directory name (like 10-game-day)", cleanCell(lab))
		case !labs[lab]:
			return fmt.Errorf("scores: %s has a score but the file has no step of it", lab)
		case byNumber[lab[:2]] != "":
			return fmt.Errorf("scores: %s and %s are two names for lab %s", byNumber[lab[:2]], lab, lab[:2])
		case sc.Seed < 0:
			return fmt.Errorf("scores: %s was played on seed %d; seeds are not negative", lab, sc.Seed)
		}
		byNumber[lab[:2]] = lab
		for _, v := range []int{sc.Yours, sc.Starter, sc.Reference} {
			if v < 0 || v > 100 {
				return fmt.Errorf("scores: %s holds %d, not a score from 0 to 100", lab, v)
			}
		}
	}
	return nil
}

// parseResultsV3 decodes a results.json and checks what gather relies on:
// version 3, the statuses, a name and a task_id (from 1) for every test.
// Fields it does not know are ignored, as Exercism's readers do.
func parseResultsV3(data []byte) (*classResults, error) {
	const what = "a results.json of version 3, as status -json writes"
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr):
			return nil, fmt.Errorf("not %s: a JSON %s, not an object", what, typeErr.Value)
		case errors.As(err, &syntaxErr):
			return nil, fmt.Errorf("not %s: not JSON: %v (at byte %d)", what, err, syntaxErr.Offset)
		}
		return nil, fmt.Errorf("not %s: %v", what, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("not %s: null, not an object", what)
	}
	if _, ok := raw["version"]; !ok {
		return nil, fmt.Errorf("not %s: no \"version\" field", what)
	}
	var r classResults
	if err := json.Unmarshal(data, &r); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return nil, fmt.Errorf("not %s: field %q holds a JSON %s, want %s", what, typeErr.Field, typeErr.Value, jsonKind(typeErr.Type.Kind().String()))
		}
		return nil, fmt.Errorf("not %s: %v", what, err)
	}
	if r.Version != 3 {
		return nil, fmt.Errorf("version %d: gather reads version 3 (Exercism's results.json with a task_id per test, as status -json writes)", r.Version)
	}
	if !slices.Contains([]string{resultPass, resultFail, resultError}, r.Status) {
		return nil, fmt.Errorf("status %q: want pass, fail or error", r.Status)
	}
	if r.Tests == nil && r.Status != resultError {
		return nil, fmt.Errorf("status %s without a \"tests\" array", r.Status)
	}
	for i, t := range r.Tests {
		test := fmt.Sprintf("tests[%d]", i)
		if t.Name == "" {
			return nil, fmt.Errorf("%s has no name", test)
		}
		test += fmt.Sprintf(" (%q)", t.Name)
		if !slices.Contains([]string{resultPass, resultFail, resultError}, t.Status) {
			return nil, fmt.Errorf("%s: status %q: want pass, fail or error", test, t.Status)
		}
		if t.TaskID < 1 {
			return nil, fmt.Errorf("%s: no task_id (the lab number, from 1), which gather groups the steps by", test)
		}
	}
	return &r, nil
}

// jsonKind names a Go kind as the JSON type it decodes from, "a string".
func jsonKind(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "slice":
		return "an array"
	case kind == "struct", kind == "map":
		return "an object"
	}
	return "a Go " + kind
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

// classTable is the learners x labs table.
type classTable struct {
	rows   []*learnerRow
	tasks  []int          // the task_ids of every file, sorted
	labs   map[int]string // task_id -> lab directory name, if a file said it
	scored []int          // the task_ids some file has a score for, sorted
}

func newClassTable(rows []*learnerRow) *classTable {
	t := &classTable{rows: rows, labs: map[int]string{}}
	for _, r := range rows {
		for id, c := range r.labs {
			if _, ok := t.labs[id]; !ok {
				t.tasks = append(t.tasks, id)
				t.labs[id] = ""
			}
			if t.labs[id] == "" && c.lab != "" {
				t.labs[id] = c.lab
			}
		}
	}
	sort.Ints(t.tasks)
	seen := map[int]bool{}
	for _, r := range rows {
		for id := range r.scores {
			if !seen[id] {
				seen[id] = true
				t.scored = append(t.scored, id)
			}
		}
	}
	sort.Ints(t.scored)
	return t
}

// scoreCells returns a row's cells of the score columns: the score, or
// "-" when the file has none for that lab.
func (t *classTable) scoreCells(r *learnerRow) []string {
	var cells []string
	for _, id := range t.scored {
		if v, ok := r.scores[id]; ok {
			cells = append(cells, strconv.Itoa(v))
		} else {
			cells = append(cells, "-")
		}
	}
	return cells
}

// scoreHeaders returns the score columns' headers: "10 score" in the
// table, "10-game-day score" in the CSV.
func (t *classTable) scoreHeaders(long bool) []string {
	var head []string
	for _, id := range t.scored {
		head = append(head, t.header(id, long)+" score")
	}
	return head
}

// header returns a lab's column header: its number, two digits, in the
// table ("05"), its directory name in the CSV ("05-breaker").
func (t *classTable) header(id int, long bool) string {
	if long && t.labs[id] != "" {
		return t.labs[id]
	}
	return fmt.Sprintf("%02d", id)
}

// total returns a row's steps passed and steps over every lab.
func (r *learnerRow) total() (passed, steps int) {
	for _, c := range r.labs {
		passed += c.passed
		steps += c.steps
	}
	return passed, steps
}

func (t *classTable) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(cells []string) { fmt.Fprintln(tw, strings.TrimRight(strings.Join(cells, "\t"), "\t")) }
	head := []string{"learner"}
	for _, id := range t.tasks {
		head = append(head, t.header(id, false))
	}
	head = append(head, t.scoreHeaders(false)...)
	line(append(head, "total", "ran at (UTC)"))
	for _, r := range t.rows {
		cells := []string{r.name}
		for _, id := range t.tasks {
			if c := r.labs[id]; c != nil {
				cells = append(cells, c.text("/"))
			} else {
				cells = append(cells, "-")
			}
		}
		cells = append(cells, t.scoreCells(r)...)
		passed, steps := r.total()
		line(append(cells, fmt.Sprintf("%d/%d", passed, steps), r.ranAt))
	}
	done := []string{"finished"}
	for _, id := range t.tasks {
		n, of := 0, 0
		for _, r := range t.rows {
			if c := r.labs[id]; c != nil {
				of++
				if c.done() {
					n++
				}
			}
		}
		done = append(done, fmt.Sprintf("%d/%d", n, of))
	}
	for range t.scored {
		done = append(done, "")
	}
	line(append(done, "", ""))
	if err := tw.Flush(); err != nil {
		return err
	}
	var legend []string
	for _, id := range t.tasks {
		if name := t.labs[id]; len(name) > 3 && labDirName.MatchString(name) {
			legend = append(legend, name[:2]+" "+name[3:])
		}
	}
	if len(legend) > 0 {
		fmt.Fprintf(w, "\nLabs: %s. A cell is steps passed/steps; finished counts the learners who passed every step of the lab.\n", strings.Join(legend, ", "))
	}
	if len(t.scored) > 0 {
		fmt.Fprintln(w, "A score is the learner's plan's score of 100 on the lab's score card (its experiment's last line).")
	}
	return nil
}

// writeCSV writes a header, then one row per learner: learner, one column
// per lab, total and ran_at.
func (t *classTable) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"learner"}
	for _, id := range t.tasks {
		head = append(head, csvSafe(t.header(id, true)))
	}
	for _, h := range t.scoreHeaders(true) {
		head = append(head, csvSafe(h))
	}
	if err := cw.Write(append(head, "total", "ran_at")); err != nil {
		return err
	}
	for _, r := range t.rows {
		rec := []string{csvSafe(r.name)}
		for _, id := range t.tasks {
			rec = append(rec, r.labs[id].text(" of "))
		}
		rec = append(rec, t.scoreCells(r)...)
		passed, steps := r.total()
		if err := cw.Write(append(rec, fmt.Sprintf("%d of %d", passed, steps), r.ranAt)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// cleanCell makes text from a learner's file safe to print in a table: no
// control characters (no escape sequences, no line breaks or tabs that
// forge rows), at most 60 runes.
func cleanCell(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

// csvSafe keeps a spreadsheet from reading a cell as a formula: text that
// begins with = + - @ gets a leading apostrophe (OWASP's advice on CSV
// injection).
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		return "'" + s
	}
	return s
}

// decodeText returns data as UTF-8 without a byte-order mark: Windows
// PowerShell 5.1's > writes UTF-16 with one, and Notepad may add a UTF-8
// one.
func decodeText(data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return data[3:], nil
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		if len(data)%2 != 0 {
			return nil, fmt.Errorf("UTF-16 with an odd number of bytes: the file is cut short")
		}
		big := data[0] == 0xFE
		units := make([]uint16, 0, len(data)/2-1)
		for i := 2; i+1 < len(data); i += 2 {
			if big {
				units = append(units, uint16(data[i])<<8|uint16(data[i+1]))
			} else {
				units = append(units, uint16(data[i+1])<<8|uint16(data[i]))
			}
		}
		return []byte(string(utf16.Decode(units))), nil
	}
	return data, nil
}
