package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// The German edition (clause 15): beside each English text a learner or
// an instructor reads, X.md, a German X.de.md. Both are cut into sections
// at their headings (outside fenced code); the German has the same
// headings at the same levels in the same order, and under each German
// heading, as the first line that is not blank, a marker naming the
// English text it translates:
//
//	### Schritt 2: Den Host nicht erreichbar machen
//	<!-- en: 3f2a9c1d04be -->
//
// The marker is the first 12 hex digits of the SHA-256 of the English
// section (sectionHash): when the English section changes, the German one
// is stale until it is translated again and its marker set anew, and
// verify says so, naming both files, both sections and the new marker.

// GermanSuffix is what a German file's name has instead of ".md".
const GermanSuffix = ".de.md"

// germanMarker matches a German section's marker line.
var germanMarker = regexp.MustCompile(`^<!-- en: ([0-9a-f]{12}) -->$`)

// mdSection is a heading and the lines under it, up to the next heading.
type mdSection struct {
	level   int      // 1 to 6
	heading string   // the heading's text, without its #s
	line    int      // the heading's line, from 1
	body    []string // the lines after the heading
	fenced  []bool   // for each line of body: inside a fenced code block
}

// headingLine matches an ATX heading.
var headingLine = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)

// splitSections cuts a Markdown text at its headings outside fenced code.
// Lines before the first heading form a section of level 0.
func splitSections(text string) []mdSection {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	fenced := lab.FencedLines(lines)
	secs := []mdSection{{}}
	for i, line := range lines {
		if m := headingLine.FindStringSubmatch(line); m != nil && !fenced[i] {
			secs = append(secs, mdSection{level: len(m[1]), heading: m[2], line: i + 1})
			continue
		}
		s := &secs[len(secs)-1]
		s.body = append(s.body, line)
		s.fenced = append(s.fenced, fenced[i])
	}
	if strings.TrimSpace(strings.Join(secs[0].body, "")) == "" {
		secs = secs[1:]
	}
	return secs
}

// sectionHash is the marker of an English section: the first 12 hex
// digits of the SHA-256 of its heading and its lines, each without
// trailing white space, blank lines at the end left out.
func sectionHash(s mdSection) string {
	lines := []string{strings.Repeat("#", s.level) + " " + s.heading}
	for _, l := range s.body {
		lines = append(lines, strings.TrimRight(l, " \t"))
	}
	for len(lines) > 1 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])[:12]
}

// germanName returns the German file's name for an English file's.
func germanName(english string) string {
	return strings.TrimSuffix(english, ".md") + GermanSuffix
}

// translationProblems compares the English file en (a slash path from the
// root) with its German translation, as clause 15 asks. hints says the
// files are a lab's HINTS.md, whose hint headings quote the tests'
// English failures and so stay the same, byte for byte.
func translationProblems(ws *repo.Workspace, en string, hints bool) []string {
	de := germanName(en)
	enText, err := os.ReadFile(ws.Abs(en))
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", en, err)}
	}
	deText, err := os.ReadFile(ws.Abs(de))
	if err != nil {
		return []string{fmt.Sprintf("%s is missing: every text in English has its German translation beside it (clause 15)", de)}
	}
	var problems []string
	base := en[strings.LastIndex(en, "/")+1:]
	if !strings.Contains(string(enText), "]("+germanName(base)+")") {
		problems = append(problems, fmt.Sprintf("%s does not link to its German translation: add a line [Deutsch](%s) under its title", en, germanName(base)))
	}
	if !strings.Contains(string(deText), "]("+base+")") {
		problems = append(problems, fmt.Sprintf("%s does not link back to the English: add a line [English](%s) under its title", de, base))
	}
	es, ds := splitSections(string(enText)), splitSections(string(deText))
	for i := range max(len(es), len(ds)) {
		if i >= len(es) || i >= len(ds) || es[i].level != ds[i].level {
			problems = append(problems, structureProblem(en, de, es, ds, i))
			break
		}
		problems = append(problems, sectionProblems(en, de, es[i], ds[i], hints)...)
	}
	return problems
}

// structureProblem describes where the two files' headings first differ.
func structureProblem(en, de string, es, ds []mdSection, i int) string {
	at := func(secs []mdSection) string {
		if i >= len(secs) {
			return "nothing (the file ends)"
		}
		return fmt.Sprintf("%q (line %d, level %d)", secs[i].heading, secs[i].line, secs[i].level)
	}
	return fmt.Sprintf("%s and %s differ in their headings: heading %d is %s in English and %s in German; the German has the same headings at the same levels in the same order",
		en, de, i+1, at(es), at(ds))
}

// sectionProblems compares an English section with its German one.
func sectionProblems(en, de string, e, d mdSection, hints bool) []string {
	var problems []string
	where := fmt.Sprintf("%s, section %q (line %d)", de, d.heading, d.line)
	if e.level == 0 { // the text before the first heading
		where = de + ", the text before its first heading"
	}
	want := sectionHash(e)
	marker, body, fenced := splitMarker(d)
	switch {
	case e.level == 0:
	case marker == "":
		problems = append(problems, fmt.Sprintf("%s has no marker of the English it translates: put <!-- en: %s --> under its heading (it translates %s's section %q, line %d)",
			where, want, en, e.heading, e.line))
	case marker != want:
		problems = append(problems, fmt.Sprintf("%s's section %q (line %d) changed since it was translated: update %s to say what the English says now, then set its marker to <!-- en: %s -->",
			en, e.heading, e.line, where, want))
	}
	if n, ok := stepNumber(e.heading); ok {
		if m, ok := stepNumber(d.heading); !ok || m != n {
			problems = append(problems, fmt.Sprintf("%s: the English heading is step %d (%q); the German one must be \"Schritt %d\"", where, n, e.heading, n))
		}
	}
	if hints && e.level == 3 && e.heading != d.heading {
		problems = append(problems, fmt.Sprintf("%s: a hint's heading quotes the tests' English failure and stays as in %s: %q", where, en, e.heading))
	}
	problems = append(problems, termProblems(where, d.heading, body, fenced)...)
	eb, db := codeBlocks(e.body, e.fenced), codeBlocks(body, fenced)
	if !slices.Equal(eb, db) {
		problems = append(problems, fmt.Sprintf("%s: its code blocks differ from the English ones (%d in English, %d in German): code blocks are copied byte for byte", where, len(eb), len(db)))
	}
	for _, c := range []struct {
		what string
		get  func(heading string, body []string, fenced []bool) []string
	}{
		{"inline code", inlineCodes},
		{"link targets", linkTargets},
		{"numbers", numbers},
	} {
		if miss, extra := multisetDiff(c.get(e.heading, e.body, e.fenced), c.get(d.heading, body, fenced)); len(miss)+len(extra) > 0 {
			problems = append(problems, fmt.Sprintf("%s: its %s differ from the English section's: missing %s, not in the English %s",
				where, c.what, listOrNone(miss), listOrNone(extra)))
		}
	}
	return problems
}

// germanTerms are the variants the German edition does not use, each
// with the one term it uses for that concept instead, so that a concept
// has one name in every German file (in prose; code and commands keep
// their English names).
var germanTerms = []struct {
	variant *regexp.Regexp
	term    string
}{
	{regexp.MustCompile(`Bestell-Service|Order-Service`), "Bestellservice"},
	{regexp.MustCompile(`Zahlungsdienst|Payment-Service`), "Zahlungsservice"},
	{regexp.MustCompile(`Menü-Service|Menu-Service`), "Menüservice"},
	{regexp.MustCompile(`Kurier-Service|Courier-Service`), "Kurierservice"},
	{regexp.MustCompile(`[Dd]oppel(?:be)?lastung`), "Doppelabbuchung"},
	{regexp.MustCompile(`Belastung`), "Abbuchung"},
	{regexp.MustCompile(`\bRepliken?\b`), "Replikat"},
	{regexp.MustCompile(`künstliche[nmrs]? Zeit|Fake-Zeit`), "simulierte Zeit"},
	{regexp.MustCompile(`Punktekarte|Score[- ]Cards?`), "Scorecard"},
	{regexp.MustCompile(`Abteilung`), "Abteil"},
}

// termProblems names each variant of germanTerms in the prose of a German
// section (outside code blocks and inline code).
func termProblems(where, heading string, body []string, fenced []bool) []string {
	var problems []string
	for _, l := range prose(heading, body, fenced) {
		l = codeSpan.ReplaceAllString(l, "")
		for _, t := range germanTerms {
			for _, v := range t.variant.FindAllString(l, -1) {
				problems = append(problems, fmt.Sprintf("%s: says %q; the German edition calls it %s in every file (one term per concept)", where, v, t.term))
			}
		}
	}
	return problems
}

// splitMarker takes a German section's marker line off its body.
func splitMarker(d mdSection) (marker string, body []string, fenced []bool) {
	for i, l := range d.body {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if m := germanMarker.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			return m[1], slices.Concat(d.body[:i], d.body[i+1:]), slices.Concat(d.fenced[:i], d.fenced[i+1:])
		}
		break
	}
	return "", d.body, d.fenced
}

// stepNumber reads "Step N..." or "Schritt N..." from a heading.
func stepNumber(heading string) (int, bool) {
	var n int
	for _, prefix := range []string{"Step ", "Schritt "} {
		if rest, ok := strings.CutPrefix(heading, prefix); ok {
			if _, err := fmt.Sscanf(rest, "%d", &n); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// codeBlocks returns each fenced code block of body, fences included.
func codeBlocks(body []string, fenced []bool) []string {
	var blocks []string
	var cur []string
	for i, l := range body {
		if fenced[i] {
			cur = append(cur, strings.TrimRight(l, " \t\r"))
			continue
		}
		if cur != nil {
			blocks = append(blocks, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	if cur != nil {
		blocks = append(blocks, strings.Join(cur, "\n"))
	}
	return blocks
}

var (
	// codeSpan matches inline code on one line: a run of backticks, then
	// anything up to the same run.
	codeSpan = regexp.MustCompile("(`+)([^`]|[^`].*?[^`])(`+)")
	// linkTarget matches a Markdown link's or image's target, and an
	// autolink.
	linkTarget = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|<(https?://[^>\s]+)>`)
	// digits matches a number, its separators included (20,000 and the
	// German 20.000; 2.5 and 2,5).
	digits = regexp.MustCompile(`[0-9]+(?:[.,][0-9]+)*`)
	// htmlComment matches an HTML comment on one line.
	htmlComment = regexp.MustCompile(`<!--.*?-->`)
)

// prose returns the section's heading and lines outside fenced code.
func prose(heading string, body []string, fenced []bool) []string {
	out := []string{heading}
	for i, l := range body {
		if !fenced[i] {
			out = append(out, l)
		}
	}
	return out
}

// inlineCodes returns the section's inline code spans.
func inlineCodes(heading string, body []string, fenced []bool) []string {
	var out []string
	for _, l := range prose(heading, body, fenced) {
		for _, m := range codeSpan.FindAllStringSubmatch(l, -1) {
			if m[1] == m[3] {
				out = append(out, m[2])
			}
		}
	}
	return out
}

// linkTargets returns the section's link targets without their anchors
// (a heading's anchor is in the language of its file), a German file's
// name read as its English one's.
func linkTargets(heading string, body []string, fenced []bool) []string {
	var out []string
	for _, l := range prose(heading, body, fenced) {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range linkTarget.FindAllStringSubmatch(l, -1) {
			t := m[1] + m[2]
			if i := strings.Index(t, "#"); i >= 0 {
				t = t[:i]
			}
			if t == "" { // a link to an anchor in the same file
				continue
			}
			out = append(out, strings.Replace(t, GermanSuffix, ".md", 1))
		}
	}
	return out
}

// numbers returns the section's numbers outside code spans, link targets
// and HTML comments, each as its digits (20,000 and 20.000 are both
// 20000).
func numbers(heading string, body []string, fenced []bool) []string {
	var out []string
	for _, l := range prose(heading, body, fenced) {
		l = htmlComment.ReplaceAllString(l, "") // markers, and what a reader does not see
		l = linkTarget.ReplaceAllString(codeSpan.ReplaceAllString(l, ""), "")
		for _, n := range digits.FindAllString(l, -1) {
			out = append(out, strings.NewReplacer(".", "", ",", "").Replace(n))
		}
	}
	return out
}

// multisetDiff returns what a has more of than b, and b more than a.
func multisetDiff(a, b []string) (missing, extra []string) {
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, s := range a {
		if count[s] > 0 {
			missing = append(missing, s)
			count[s]--
		}
	}
	for _, s := range b {
		if count[s] < 0 {
			extra = append(extra, s)
			count[s]++
		}
	}
	return missing, extra
}

// listOrNone quotes the items, or says "none".
func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) > 8 {
		q = append(q[:8], fmt.Sprintf("and %d more", len(items)-8))
	}
	return strings.Join(q, ", ")
}
