package class

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

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

// print writes the table, its ages measured from now.
func (t *classTable) print(w io.Writer, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(cells []string) { fmt.Fprintln(tw, strings.TrimRight(strings.Join(cells, "\t"), "\t")) }
	head := []string{"learner"}
	for _, id := range t.tasks {
		head = append(head, t.header(id, false))
	}
	head = append(head, t.scoreHeaders(false)...)
	line(append(head, "total", "stuck at", "since last pass", "ran at (UTC)"))
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
		line(append(cells, fmt.Sprintf("%d/%d", passed, steps), r.stuck, r.sinceLastPass(now), r.ranAt))
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
	line(append(done, "", "", "", ""))
	if err := tw.Flush(); err != nil {
		return err
	}
	var legend []string
	for _, id := range t.tasks {
		if name := t.labs[id]; len(name) > 3 && lab.DirName.MatchString(name) {
			legend = append(legend, name[:2]+" "+name[3:])
		}
	}
	if len(legend) > 0 {
		fmt.Fprintf(w, "\nLabs: %s. A cell is steps passed/steps; finished counts the learners who passed every step of the lab.\n", strings.Join(legend, ", "))
	}
	fmt.Fprintln(w, "Stuck at is the first step not passed; since last pass is how long ago a passing step's tests last ran (by this computer's clock).")
	if len(t.scored) > 0 {
		fmt.Fprintln(w, "A score is the learner's plan's score of 100 on the lab's score card (its experiment's last line).")
	}
	return nil
}

// writeCSV writes a header, then one row per learner: learner, one column
// per lab, the score columns, total, ran_at, stuck_at and last_pass_at
// (RFC 3339: a CSV is read later, when an age would be stale).
func (t *classTable) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"learner"}
	for _, id := range t.tasks {
		head = append(head, csvSafe(t.header(id, true)))
	}
	for _, h := range t.scoreHeaders(true) {
		head = append(head, csvSafe(h))
	}
	if err := cw.Write(append(head, "total", "ran_at", "stuck_at", "last_pass_at")); err != nil {
		return err
	}
	for _, r := range t.rows {
		rec := []string{csvSafe(r.name)}
		for _, id := range t.tasks {
			rec = append(rec, r.labs[id].text(" of "))
		}
		rec = append(rec, t.scoreCells(r)...)
		passed, steps := r.total()
		rec = append(rec, fmt.Sprintf("%d of %d", passed, steps), csvSafe(r.ranAt), csvSafe(r.stuck), csvSafe(r.lastPassAt()))
		if err := cw.Write(rec); err != nil {
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
// begins with = + - @, a tab or a carriage return gets a leading
// apostrophe (OWASP's advice on CSV injection).
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
