package contract

import (
	"flag"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// stampGerman fills the markers of new translations: every line
// "<!-- en: TODO -->" under a German heading becomes the marker of the
// English section it stands for. A stale marker is never touched: that
// one is for the translator to renew once the German says what the
// English says.
var stampGerman = flag.Bool("stamp-german", false, "fill the <!-- en: TODO --> markers of the repository's German files")

// checkGerman runs clause 15 on the German files there are, at once,
// for whoever is translating (verify runs it on every lab).
var checkGerman = flag.Bool("check-german", false, "check the repository's German files against the English (clause 15)")

const englishSample = `# Lab 05 (breaker)

[Deutsch](README.de.md)

## The story

Payment fails 50% of 20 calls; the breaker opens after 20,000 ms.

### Step 2: Open at half

Call ` + "`Breaker.Allow`" + ` first. See [the notes](NOTES.md#why) and [step 1](#step-1).

` + "```go\nb := New(Settings{Window: 20})\n```" + `
`

const germanSample = `# Lab 05 (Breaker)
<!-- en: %s -->

[English](README.md)

## Die Geschichte
<!-- en: %s -->

Payment scheitert bei 50 % von 20 Aufrufen; der Breaker öffnet nach 20.000 ms.

### Schritt 2: Bei der Hälfte öffnen
<!-- en: %s -->

Zuerst ` + "`Breaker.Allow`" + ` aufrufen. Siehe [die Notizen](NOTES.de.md#warum) und [Schritt 1](#schritt-1).

` + "```go\nb := New(Settings{Window: 20})\n```" + `
`

// translationRepo writes the English and German samples into a new
// repository and returns it; the German's markers are those of the
// English sample's sections.
func translationRepo(t *testing.T, english, german string) *repo.Workspace {
	t.Helper()
	root := t.TempDir()
	for name, text := range map[string]string{"README.md": english, "README.de.md": german} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &repo.Workspace{Root: root}
}

// markedGerman returns the German sample with the right markers.
func markedGerman() string {
	secs := splitSections(englishSample)
	return sprintfMarkers(germanSample, sectionHash(secs[0]), sectionHash(secs[1]), sectionHash(secs[2]))
}

// sprintfMarkers puts the hashes in place of format's %s, in order.
func sprintfMarkers(format string, hashes ...string) string {
	for _, h := range hashes {
		format = strings.Replace(format, "%s", h, 1)
	}
	return format
}

func TestTranslationInSync(t *testing.T) {
	if problems := translationProblems(translationRepo(t, englishSample, markedGerman()), "README.md", false); len(problems) > 0 {
		t.Fatalf("a German in sync has problems:\n%s", strings.Join(problems, "\n"))
	}
}

// Each way the two files can drift apart is found, and the message names
// the files, the section and what to do.
func TestTranslationDrift(t *testing.T) {
	good := markedGerman()
	newHash := sectionHash(splitSections(strings.Replace(englishSample, "Payment fails", "Payment refuses", 1))[1])
	for _, c := range []struct {
		name, english, german string
		want                  []string
	}{
		{"an English sentence changed", strings.Replace(englishSample, "Payment fails", "Payment refuses", 1), good,
			[]string{`README.md's section "The story" (line 5) changed since it was translated: update README.de.md, section "Die Geschichte" (line 6)`, "<!-- en: " + newHash + " -->"}},
		{"a number in a German code block", englishSample, strings.Replace(good, "Window: 20}", "Window: 25}", 1),
			[]string{`README.de.md, section "Schritt 2: Bei der Hälfte öffnen" (line 11): its code blocks differ from the English ones`}},
		{"a number in German prose", englishSample, strings.Replace(good, "20.000 ms", "2.000 ms", 1),
			[]string{`section "Die Geschichte" (line 6): its numbers differ from the English section's: missing "20000", not in the English "2000"`}},
		{"a link target", englishSample, strings.Replace(good, "NOTES.de.md#warum", "HINTS.de.md", 1),
			[]string{`its link targets differ from the English section's: missing "NOTES.md", not in the English "HINTS.md"`}},
		{"inline code", englishSample, strings.Replace(good, "`Breaker.Allow`", "`Breaker.Erlauben`", 1),
			[]string{`its inline code differ`, `"Breaker.Allow"`}},
		{"a marker missing", englishSample, strings.Replace(good, "### Schritt 2: Bei der Hälfte öffnen\n<!-- en: ", "### Schritt 2: Bei der Hälfte öffnen\n<!-- xx: ", 1),
			[]string{`section "Schritt 2: Bei der Hälfte öffnen" (line 11) has no marker of the English it translates: put <!-- en: `}},
		{"a step renumbered", englishSample, strings.Replace(good, "### Schritt 2:", "### Schritt 3:", 1),
			[]string{`the English heading is step 2 ("Step 2: Open at half"); the German one must be "Schritt 2"`, `missing "2", not in the English "3"`}},
		{"a heading missing", englishSample, strings.Replace(good, "### Schritt 2: Bei der Hälfte öffnen\n", "", 1),
			[]string{`README.md and README.de.md differ in their headings: heading 3 is "Step 2: Open at half" (line 9, level 3) in English and nothing (the file ends) in German`}},
		{"a heading's level", englishSample, strings.Replace(good, "### Schritt 2:", "## Schritt 2:", 1),
			[]string{`heading 3 is "Step 2: Open at half" (line 9, level 3) in English and "Schritt 2: Bei der Hälfte öffnen" (line 11, level 2) in German`}},
		{"no link back", englishSample, strings.Replace(good, "[English](README.md)", "English", 1),
			[]string{"README.de.md does not link back to the English: add a line [English](README.md) under its title"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(translationProblems(translationRepo(t, c.english, c.german), "README.md", false), "\n")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("problems lack %q:\n%s", w, got)
				}
			}
		})
	}
	if got := translationProblems(translationRepo(t, englishSample, good), "NOTES.md", false); len(got) != 1 || !strings.Contains(got[0], "NOTES.md: ") {
		t.Errorf("a missing English file: got %q", got)
	}
}

// A hint's heading quotes the test's English failure: its German section
// keeps it, byte for byte.
func TestTranslationKeepsHintHeadings(t *testing.T) {
	en := "# Hints\n\n[Deutsch](README.de.md)\n\n## Step 1\n\n### \"must open after 5 failures\"\n\nWhat must it remember?\n"
	secs := splitSections(en)
	de := "# Hinweise\n<!-- en: " + sectionHash(secs[0]) + " -->\n\n[English](README.md)\n\n## Schritt 1\n<!-- en: " + sectionHash(secs[1]) +
		" -->\n\n### \"muss nach 5 Fehlern öffnen\"\n<!-- en: " + sectionHash(secs[2]) + " -->\n\nWas muss er sich merken?\n"
	got := strings.Join(translationProblems(translationRepo(t, en, de), "README.md", true), "\n")
	if !strings.Contains(got, `a hint's heading quotes the tests' English failure and stays as in README.md: "\"must open after 5 failures\""`) {
		t.Errorf("a translated hint heading: got\n%s", got)
	}
}

// The repository's German files are in sync with the English, and with
// -stamp-german the markers of new translations are filled.
func TestRepositoryGermanMarkers(t *testing.T) {
	ws, err := repo.Open("../../../..", io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(ws.Root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if err == nil && strings.HasSuffix(p, GermanSuffix) {
			files = append(files, p)
		}
		return nil
	})
	todo := regexp.MustCompile(`(?m)^<!-- en: TODO -->$`)
	for _, de := range files {
		data, err := os.ReadFile(de)
		if err != nil {
			t.Fatal(err)
		}
		if !todo.Match(data) {
			continue
		}
		if !*stampGerman {
			t.Errorf("%s has markers still to fill: go test ./cmd/workshop/internal/contract -run TestRepositoryGermanMarkers -stamp-german", de)
			continue
		}
		en, err := os.ReadFile(strings.TrimSuffix(de, GermanSuffix) + ".md")
		if err != nil {
			t.Fatal(err)
		}
		es, ds := splitSections(string(en)), splitSections(string(data))
		lines := strings.Split(string(data), "\n")
		for i, d := range ds {
			if i >= len(es) {
				break
			}
			for j, l := range d.body {
				if strings.TrimSpace(l) == "" {
					continue
				}
				if strings.TrimSpace(l) == "<!-- en: TODO -->" {
					lines[d.line+j] = "<!-- en: " + sectionHash(es[i]) + " -->"
				}
				break
			}
		}
		if err := os.WriteFile(de, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !*checkGerman {
		return
	}
	var problems []string
	labs := map[string]bool{}
	for _, de := range files {
		rel, _ := filepath.Rel(ws.Root, de)
		rel = filepath.ToSlash(rel)
		if dir, ok := strings.CutPrefix(path.Dir(rel), "labs/"); ok {
			if !labs[dir] {
				labs[dir] = true
				info, err := lab.ReadInfo(ws, lab.Lab{Name: dir, Present: true})
				if err != nil {
					t.Fatal(err)
				}
				problems = append(problems, germanLabProblems(ws, info)...)
			}
			continue
		}
		problems = append(problems, translationProblems(ws, strings.TrimSuffix(rel, GermanSuffix)+".md", false)...)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// One term per concept: a German section that says "Bestell-Service" (or
// another variant of germanTerms) is named with the term to use; the same
// words inside inline code or a code block are code, and pass.
func TestGermanTermsAreOnePerConcept(t *testing.T) {
	en := mdSection{level: 2, heading: "The pattern", body: []string{"The order service retries `Bestell-Service`.", "```", "Bestell-Service", "```"},
		fenced: []bool{false, true, true, true}}
	de := mdSection{level: 2, heading: "Das Muster", body: []string{"<!-- en: " + sectionHash(en) + " -->", "Der Bestell-Service wiederholt `Bestell-Service`; eine Belastung.",
		"```", "Bestell-Service", "```"}, fenced: []bool{false, false, true, true, true}}
	problems := sectionProblems("README.md", "README.de.md", en, de, false)
	want := []string{`says "Bestell-Service"; the German edition calls it Bestellservice`, `says "Belastung"; the German edition calls it Abbuchung`}
	if len(problems) != len(want) {
		t.Fatalf("want %d problems (the prose's two variants, not the code's), got %d:\n%s", len(want), len(problems), strings.Join(problems, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %d: %s\nwant it to say %s", i+1, problems[i], w)
		}
	}
	de.body[1] = "Der Bestellservice wiederholt `Bestell-Service`; eine Abbuchung."
	if problems := sectionProblems("README.md", "README.de.md", en, de, false); len(problems) != 0 {
		t.Errorf("the one terms pass: %s", strings.Join(problems, "\n"))
	}
}
