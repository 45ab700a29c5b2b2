package lab

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Readme is what the tool reads from a lab's README.md.
type Readme struct {
	Sections []string       // level-2 headings, in order
	Steps    map[int]string // step number -> title, from "### Step N: title" under "## Steps"
	Anchors  map[int]string // step number -> GitHub anchor of its heading
	Order    []int          // step numbers in the order they appear
	// HintsLink reports whether the "## Hints" section links to HINTS.md
	// (a Markdown link "](HINTS.md)" or "](./HINTS.md)", with or without an anchor).
	HintsLink bool
	// ProductionLink reports whether the "## In production" section links
	// to PRODUCTION.md, the same way.
	ProductionLink bool
	// Words counts the words of each level-2 section ("" for the text
	// before the first one), headings included: whitespace-separated
	// tokens outside fenced code blocks and tables (lines starting with
	// "|" whose second line is a delimiter row), markup such as "###"
	// not counted.
	Words map[string]int
}

// stepHeading matches a step's heading, "Step N: title" (or, in a German
// README.de.md, "Schritt N: Titel").
var stepHeading = regexp.MustCompile(`(?i)^(?:step|schritt)\s+([0-9]+)\s*(?:[:.)]|-|–|—)?\s*(.*)$`)

// Fence is a Markdown code Fence: a run of at least three backticks or
// tildes (CommonMark). The zero Fence is no Fence.
type Fence struct {
	char byte
	N    int
}

// FenceOf returns the fence a trimmed line begins with, or the zero fence.
// A backtick fence's info string holds no backtick, so "```a``` text" is
// inline code, not a fence.
func FenceOf(trimmed string) Fence {
	if trimmed == "" || trimmed[0] != '`' && trimmed[0] != '~' {
		return Fence{}
	}
	c := trimmed[0]
	n := 0
	for n < len(trimmed) && trimmed[n] == c {
		n++
	}
	if n < 3 || c == '`' && strings.Contains(trimmed[n:], "`") {
		return Fence{}
	}
	return Fence{c, n}
}

// IndentOf returns the columns of white space a line begins with, a tab
// advancing to the next multiple of four (CommonMark).
func IndentOf(line string) int {
	col := 0
	for _, c := range line {
		switch c {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col
		}
	}
	return col
}

// fenceLine returns the fence a line opens, or the zero fence. Indented by
// four columns or more, a run of backticks is a paragraph's continuation
// or indented code, not a fence (CommonMark).
func fenceLine(line string) Fence {
	if IndentOf(line) > 3 {
		return Fence{}
	}
	return FenceOf(strings.TrimSpace(line))
}

// closesLine reports whether line closes the fence f: indented by at
// most three columns, as a fence must be, the same character, at least as
// many, and nothing after them.
func (f Fence) closesLine(line string) bool {
	trimmed := strings.TrimSpace(line)
	g := FenceOf(trimmed)
	return IndentOf(line) <= 3 && g.char == f.char && g.N >= f.N && strings.Trim(trimmed, string(f.char)) == ""
}

// htmlBlockStart matches the first line of an HTML block of CommonMark's
// sixth kind (a block-level tag), which runs to the next blank line: its
// text is shown, and a run of backticks inside it opens no code block.
var htmlBlockStart = regexp.MustCompile(`(?i)^ {0,3}</?(address|article|aside|blockquote|center|details|dialog|div|dl|fieldset|figcaption|figure|footer|form|header|main|nav|ol|p|section|summary|table|tbody|td|tfoot|th|thead|tr|ul)(\s|/?>|$)`)

// htmlTag matches an HTML tag, which shows no words.
var htmlTag = regexp.MustCompile(`<[^>]*>`)

// tableDelimiter matches a table's delimiter row, "|---|:--:|".
var tableDelimiter = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)

// ParseReadme reads headings outside fenced code blocks.
func ParseReadme(text string) Readme {
	r := Readme{Steps: map[int]string{}, Anchors: map[int]string{}, Words: map[string]int{}}
	var open Fence  // the fence of the code block we are in, if any
	inHTML := false // in an HTML block, which ends at a blank line
	section := ""
	// A line starting with "|" is a table row only when a delimiter row
	// follows its first row; until then its words wait in pending.
	inTable, header, pending := false, false, 0
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		if open.N > 0 {
			if open.closesLine(line) {
				open = Fence{}
			}
			continue
		}
		if translationMarker.MatchString(trimmed) {
			continue // a German README.de.md's record of the English it translates
		}
		if inHTML || htmlBlockStart.MatchString(line) {
			inHTML = trimmed != ""
			r.Words[section] += pending + len(strings.Fields(htmlTag.ReplaceAllString(line, " ")))
			inTable, header, pending = false, false, 0
			continue
		}
		if f := fenceLine(line); f.N > 0 {
			open = f
			continue
		}
		isRow := strings.HasPrefix(trimmed, "|")
		switch {
		case isRow && inTable:
		case isRow && header && tableDelimiter.MatchString(trimmed):
			inTable, header, pending = true, false, 0 // the pending row was a table's header
		case isRow:
			r.Words[section] += pending // a "|" line that began no table is prose
			header, pending = true, len(strings.Fields(trimmed))
		default:
			r.Words[section] += pending
			inTable, header, pending = false, false, 0
		}
		if isRow {
			continue
		}
		if strings.HasPrefix(line, "## ") {
			section = headingText(line[3:])
			r.Sections = append(r.Sections, section)
		}
		r.Words[section] += len(strings.Fields(strings.TrimLeft(trimmed, "#")))
		switch {
		case strings.EqualFold(section, "Hints") && hintsLink.MatchString(line):
			r.HintsLink = true
		case strings.EqualFold(section, "In production") && productionLink.MatchString(line):
			r.ProductionLink = true
		case strings.HasPrefix(line, "### ") && (strings.EqualFold(section, "Steps") || strings.EqualFold(section, "Schritte")):
			h := headingText(line[4:])
			m := stepHeading.FindStringSubmatch(h)
			if m == nil {
				continue
			}
			n, err := strconv.Atoi(m[1])
			if err != nil {
				continue
			}
			if _, dup := r.Steps[n]; !dup {
				r.Order = append(r.Order, n)
			}
			r.Steps[n] = strings.TrimSpace(m[2])
			r.Anchors[n] = githubAnchor(h)
		}
	}
	r.Words[section] += pending
	return r
}

// headingText trims a heading's text and its optional closing #s.
func headingText(s string) string {
	s = strings.TrimSpace(s)
	if t := strings.TrimRight(s, "#"); t != s && strings.HasSuffix(t, " ") {
		s = strings.TrimSpace(t)
	}
	return s
}

// githubAnchor returns the anchor GitHub gives a heading: lower case,
// punctuation removed, spaces turned into hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// ReadmeSections are the level-2 sections every lab README has, in order.
// The last two only link to HINTS.md and PRODUCTION.md.
var ReadmeSections = []string{"The story", "The pattern", "Steps", "Hints", "Experiment", "In production"}

// Word limits of a lab README (clause 9), counted as Readme.Words does:
// everything but the two link sections is what a learner reads before
// and while solving the lab, in about ten minutes at 200 words a minute.
const (
	ReadmeWordLimit      = 2000
	LinkSectionWordLimit = 60 // "## Hints" and "## In production": a sentence and a link
)

// MissingSections returns the required sections that are missing or out of
// order (extra sections in between are allowed).
func MissingSections(have []string) []string {
	var missing []string
	i := 0
	for _, want := range ReadmeSections {
		j := i
		for j < len(have) && !strings.EqualFold(have[j], want) {
			j++
		}
		if j == len(have) {
			missing = append(missing, want)
			continue
		}
		i = j + 1
	}
	return missing
}
