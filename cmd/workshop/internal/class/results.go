package class

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

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
	for Lab, sc := range r.Scores {
		id, _ := strconv.Atoi(Lab[:2])
		row.scores[id] = sc.Yours
	}
	if row.learner == "" {
		row.learner = cleanCell(resultsDirName(file))
	}
	if row.learner == "" {
		row.learner = cleanCell(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
	}
	type stepOfLab struct{ task, step int }
	seen := map[stepOfLab]bool{}
	var steps []stepEntry
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
		e := stepEntry{task: t.TaskID, step: t.Step, order: len(steps), status: t.Status}
		if t.RanAt != "" {
			e.ranAt, _ = time.Parse(time.RFC3339, t.RanAt) // parseResultsV3 checked it
		}
		steps = append(steps, e)
		c := row.labs[t.TaskID]
		if c == nil {
			c = &labCell{lab: cleanCell(t.Lab)}
			row.labs[t.TaskID] = c
		}
		c.steps++
		switch t.Status {
		case ResultPass:
			c.passed++
		case ResultError:
			c.error++
		}
	}
	row.steps = steps
	row.stuck = stuckAt(steps, row.labs)
	row.lastPass, row.passes = lastPass(steps)
	return row, nil
}

// checkScores checks r's scores as gather relies on them: each is a lab's
// directory name that the file has steps of (the lab field of its
// tests), one name per lab number, three scores from 0 to 100 and a seed
// that is not negative. Decoding has already refused a score that is not
// a whole number.
func checkScores(r *Results) error {
	labs := map[string]bool{}
	for _, t := range r.Tests {
		labs[t.Lab] = true
	}
	names := slices.Sorted(maps.Keys(r.Scores))
	byNumber := map[string]string{}
	for _, Lab := range names {
		sc := r.Scores[Lab]
		switch {
		case !lab.DirName.MatchString(Lab):
			return fmt.Errorf("scores: %q is not a lab's directory name (like 10-game-day)", cleanCell(Lab))
		case !labs[Lab]:
			return fmt.Errorf("scores: %s has a score but the file has no step of it", Lab)
		case byNumber[Lab[:2]] != "":
			return fmt.Errorf("scores: %s and %s are two names for lab %s", byNumber[Lab[:2]], Lab, Lab[:2])
		case sc.Seed < 0:
			return fmt.Errorf("scores: %s was played on seed %d; seeds are not negative", Lab, sc.Seed)
		}
		byNumber[Lab[:2]] = Lab
		for _, v := range []int{sc.Yours, sc.Starter, sc.Reference} {
			if v < 0 || v > 100 {
				return fmt.Errorf("scores: %s holds %d, not a score from 0 to 100", Lab, v)
			}
		}
	}
	return nil
}

// parseResultsV3 decodes a results.json and checks what gather relies on:
// version 3, the statuses, a name and a task_id (from 1) for every test,
// and that a test's ran_at, if any, is an RFC 3339 time.
// Fields it does not know are ignored, as Exercism's readers do.
func parseResultsV3(data []byte) (*Results, error) {
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
	var r Results
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
	if !slices.Contains([]string{ResultPass, ResultFail, ResultError}, r.Status) {
		return nil, fmt.Errorf("status %q: want pass, fail or error", r.Status)
	}
	if r.Tests == nil && r.Status != ResultError {
		return nil, fmt.Errorf("status %s without a \"tests\" array", r.Status)
	}
	for i, t := range r.Tests {
		test := fmt.Sprintf("tests[%d]", i)
		if t.Name == "" {
			return nil, fmt.Errorf("%s has no name", test)
		}
		test += fmt.Sprintf(" (%q)", t.Name)
		if !slices.Contains([]string{ResultPass, ResultFail, ResultError}, t.Status) {
			return nil, fmt.Errorf("%s: status %q: want pass, fail or error", test, t.Status)
		}
		if t.TaskID < 1 {
			return nil, fmt.Errorf("%s: no task_id (the lab number, from 1), which gather groups the steps by", test)
		}
		if _, err := time.Parse(time.RFC3339, t.RanAt); t.RanAt != "" && err != nil {
			return nil, fmt.Errorf("%s: ran_at %q is not an RFC 3339 time", test, t.RanAt)
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
