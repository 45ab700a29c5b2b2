package lab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// A lab's hints are in labs/NN-name/HINTS.md, a Markdown file in this form:
//
//	# Lab 03 (retries): hints              (anything before the first "## " is a preamble)
//
//	## Step 1                              one level-2 heading per step, in increasing order
//
//	### "Retryable(HTTP 404) = true"       one level-3 heading per hint: the symptom it answers
//
//	List the transient statuses ...        the hint's body, Markdown, up to the next ## or ###
//
//	### "Retryable(HTTP 404) = true"       the same heading again: the chain's next hint, less gentle
//
//	### "the first attempt ... timed out"  another symptom of step 1, with a chain of its own
//
// The hints under one heading are a chain, from the gentlest to the most
// explicit (only the last shows code); the contract (clause 9, see
// hintChainProblems in package contract) wants at least two per chain.
// Headings inside fenced code blocks are body text; deeper headings (####)
// are body text too. A step has at least one hint and a hint a non-empty
// body.

// HintFile is a parsed HINTS.md.
type HintFile struct {
	Steps []hintStep
}

type hintStep struct {
	N     int
	Line  int
	Hints []Hint
}

// Hint is one hint: the symptom it answers, from its heading, and what it
// says.
type Hint struct {
	Symptom string // the heading's text
	Body    string // Markdown, without leading and trailing blank lines
	Line    int    // the heading's line
}

// Step returns the hints of step n (nil when it has none).
func (f HintFile) Step(n int) []Hint {
	for _, s := range f.Steps {
		if s.N == n {
			return s.Hints
		}
	}
	return nil
}

// translationMarker matches the line under each heading of a German
// HINTS.de.md that names the English section it translates (clause 15);
// it is no part of a hint.
var translationMarker = regexp.MustCompile(`^<!-- en: [0-9a-f]{12} -->$`)

var hintStepHeading = regexp.MustCompile(`^(?:Step|Schritt) ([0-9]+)$`)

// ParseHints reads a HINTS.md in the form above; name is the file's name
// in the problems it reports, each "name:line: what". It returns what it could read even
// when there are problems.
func ParseHints(name, text string) (HintFile, []string) {
	var f HintFile
	var problems []string
	bad := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	var (
		step     *hintStep // the current step
		h        *Hint     // the current hint
		body     []string  // the current hint's lines
		open     Fence     // the fence of the code block we are in, if any
		fenceAt  int
		stray    int // first line of text between a step heading and its first hint
		lineNo   int
		sawTitle bool
	)
	endHint := func() {
		if h == nil {
			return
		}
		h.Body = strings.Trim(strings.Join(body, "\n"), "\n")
		if strings.TrimSpace(h.Body) == "" {
			bad(h.Line, "hint %q has no body", h.Symptom)
		}
		step.Hints = append(step.Hints, *h)
		h, body = nil, nil
	}
	endStep := func() {
		endHint()
		if step == nil {
			return
		}
		if len(step.Hints) == 0 {
			bad(step.Line, "step %d has no hint (### symptom, then the hint)", step.N)
		}
		f.Steps = append(f.Steps, *step)
		step = nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		switch fo := fenceLine(line); {
		case open.N == 0 && fo.N > 0:
			open, fenceAt = fo, lineNo
		case open.N > 0 && open.closesLine(line):
			open = Fence{}
		case open.N > 0:
		case strings.HasPrefix(line, "# "):
			if sawTitle || step != nil {
				bad(lineNo, "a level-1 heading belongs only at the top of the file")
			}
			sawTitle = true
			continue
		case strings.HasPrefix(line, "## "):
			endStep()
			text := headingText(line[3:])
			m := hintStepHeading.FindStringSubmatch(text)
			n, err := 0, errors.New("no match")
			if m != nil {
				n, err = strconv.Atoi(m[1])
			}
			if err != nil || n < 1 {
				bad(lineNo, "level-2 heading %q: want \"## Step N\" (N from 1)", text)
				continue
			}
			if k := len(f.Steps); k > 0 && f.Steps[k-1].N >= n {
				bad(lineNo, "step %d comes after step %d: steps go in increasing order, each once", n, f.Steps[k-1].N)
			}
			step, stray = &hintStep{N: n, Line: lineNo}, 0
			continue
		case strings.HasPrefix(line, "### "):
			if step == nil {
				bad(lineNo, "hint %q comes before any \"## Step N\" heading", headingText(line[4:]))
				continue
			}
			endHint()
			h = &Hint{Symptom: headingText(line[4:]), Line: lineNo}
			if h.Symptom == "" {
				bad(lineNo, "a hint's heading is empty: it names the symptom the hint answers")
			}
			continue
		case line == "#" || line == "##" || line == "###":
			bad(lineNo, "an empty heading")
			continue
		case translationMarker.MatchString(trimmed):
			continue // a German file's record of the English it translates
		}
		switch {
		case h != nil:
			body = append(body, line)
		case step != nil && trimmed != "" && stray == 0:
			stray = lineNo
			bad(lineNo, "text under \"## Step %d\" before its first hint: every hint starts with \"### symptom\"", step.N)
		}
	}
	if open.N > 0 {
		bad(fenceAt, "a code block that is never closed")
	}
	endStep()
	if len(f.Steps) == 0 && len(problems) == 0 {
		bad(lineNo, "no \"## Step N\" heading: the file has no hints")
	}
	return f, problems
}

// ReadHints reads and parses a lab's HINTS.md, or its HINTS.de.md when
// the learner's commands speak German (Localized).
func ReadHints(ws *repo.Workspace, l Lab) (HintFile, []string, error) {
	rel := path.Join(l.Dir(), Localized(ws, l, "HINTS.md"))
	data, err := os.ReadFile(ws.Abs(rel))
	if err != nil {
		return HintFile{}, nil, err
	}
	f, problems := ParseHints(rel, string(data))
	return f, problems, nil
}
