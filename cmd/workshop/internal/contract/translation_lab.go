package contract

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// GermanWordLimit is the most words a German lab README.de.md may have,
// counted as clause 9 counts the English (lab.Readme.Words, the link
// sections left out): German runs about a tenth longer than English.
const GermanWordLimit = 2200

// ProjectTexts are the texts outside the labs that have a German
// translation (clause 15), as slash paths from the root.
var ProjectTexts = []string{"README.md", "docs/instructors.md"}

// hasGermanEdition reports whether the repository has a German edition:
// a README.de.md at its root. Without one, clause 15 is not checked.
func hasGermanEdition(ws *repo.Workspace) bool {
	_, err := os.Stat(ws.Abs(germanName("README.md")))
	return err == nil
}

// germanLabProblems checks a lab's German texts (clause 15): README.de.md,
// HINTS.de.md and PRODUCTION.de.md each translate their English file
// section by section (translationProblems); README.de.md keeps within
// GermanWordLimit; HINTS.de.md parses as HINTS.md does and its hints teach
// before they tell, as clause 9 asks of the English.
func germanLabProblems(ws *repo.Workspace, info lab.Info) []string {
	var problems []string
	for _, name := range []string{"README.md", "HINTS.md", "PRODUCTION.md"} {
		problems = append(problems, translationProblems(ws, path.Join(info.Dir(), name), name == "HINTS.md")...)
	}
	if data, err := os.ReadFile(ws.Abs(path.Join(info.Dir(), germanName("README.md")))); err == nil {
		de := lab.ParseReadme(string(data))
		total := de.Words[""]
		for i, name := range de.Sections {
			if i < len(info.Readme.Sections) && isLinkSection(info.Readme.Sections[i]) {
				continue
			}
			total += de.Words[name]
		}
		if total > GermanWordLimit {
			problems = append(problems, fmt.Sprintf("%s/README.de.md has %d words outside its link sections, more than %d: cut it as the English is cut", info.Dir(), total, GermanWordLimit))
		}
	}
	name := path.Join(info.Dir(), germanName("HINTS.md"))
	if data, err := os.ReadFile(ws.Abs(name)); err == nil {
		hints, bad := lab.ParseHints(name, string(data))
		problems = append(problems, bad...)
		problems = append(problems, hintChainProblems(name, hints)...)
	}
	return problems
}

// isLinkSection reports whether a README's level-2 section only links to
// another file.
func isLinkSection(name string) bool {
	return strings.EqualFold(name, "Hints") || strings.EqualFold(name, "In production")
}

// germanProjectTexts returns the ProjectTexts clause 15 checks: those
// with a German translation, and all of them once the repository has a
// German edition.
func germanProjectTexts(ws *repo.Workspace) []string {
	var out []string
	for _, en := range ProjectTexts {
		if _, err := os.Stat(ws.Abs(germanName(en))); err == nil || hasGermanEdition(ws) {
			out = append(out, en)
		}
	}
	return out
}

// germanProjectProblems checks the German translations of texts.
func germanProjectProblems(ws *repo.Workspace, texts []string) []string {
	var problems []string
	for _, en := range texts {
		problems = append(problems, translationProblems(ws, en, false)...)
	}
	return problems
}

// germanNames returns the German files' names of the English ones.
func germanNames(english []string) []string {
	out := make([]string, len(english))
	for i, e := range english {
		out[i] = germanName(e)
	}
	return out
}
