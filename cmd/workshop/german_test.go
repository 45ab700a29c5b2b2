package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// In German (-lang de, GOPHEREATS_LANG=de or a German locale), the
// learner's commands speak German, take the step titles from README.de.md
// and the hints from HINTS.de.md; the tests' stories stay English, and
// status -json stays English for the instructor's tools.
func TestLearnerCommandsInGerman(t *testing.T) {
	root := newFixtureRepo(t)
	dir := filepath.Join(root, "labs", "01-timeouts")
	for name, text := range map[string]string{
		"README.de.md": "# Lab 01\n<!-- en: 000000000000 -->\n\n## Die Geschichte\n\n## Das Muster\n\n## Schritte\n\n" +
			"### Schritt 1: Innerhalb des Budgets aufgeben\n\n### Schritt 2: Das Experiment ausführen\n\n## Hinweise\n\n## Experiment\n\n## In Produktion\n",
		"HINTS.de.md": "# Lab 01 (timeouts): Hinweise\n<!-- en: 000000000000 -->\n\n## Schritt 1\n<!-- en: 000000000000 -->\n\n### \"the budget is 0s\"\n<!-- en: 000000000000 -->\n\nWas gibt das README an?\n\n" +
			"### \"the budget is 0s\"\n<!-- en: 000000000000 -->\n\nGib 2 zurück.\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	t.Setenv("GOPHEREATS_LANG", "")
	for _, c := range []struct {
		name string
		args []string
		env  [2]string
		want []string
	}{
		{"hint -lang de", []string{"-lang", "de", "hint", "01"}, [2]string{}, []string{
			"Lab 01: Der erste Schritt, der nicht besteht, ist Schritt 1: Innerhalb des Budgets aufgeben (labs/01-timeouts/README.de.md#schritt-1-innerhalb-des-budgets-aufgeben).",
			"the budget is 0s", // the test's story, in English
			"Schritt 1, Hinweis 1 von 2 zu diesem Fehler: \"the budget is 0s\"",
			"\nWas gibt das README an?\n",
		}},
		{"status by the environment", []string{"status"}, [2]string{"GOPHEREATS_LANG", "de"}, []string{
			"Resilience-Workshop: dein Stand",
			"Lab 01 timeouts         0 von 2 Schritten bestanden",
			"Weiter: Lab 01 Schritt 1: Innerhalb des Budgets aufgeben -> lies labs/01-timeouts/README.de.md#schritt-1-innerhalb-des-budgets-aufgeben",
		}},
		{"check by the locale", []string{"check", "01"}, [2]string{"LANG", "de_DE.UTF-8"}, []string{
			"Lab 01 timeouts: 0 von 2 Schritten bestanden",
			"scheitert Schritt 2: Das Experiment ausführen",
		}},
		{"status -json stays English", []string{"status", "-json"}, [2]string{"GOPHEREATS_LANG", "de"}, []string{
			`"name": "Lab 01 timeouts, step 1: Give up within the budget"`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			var out bytes.Buffer
			err := run(ctx, append([]string{"workshop", "-C", root}, c.args...), &out, &out)
			if err != nil && !errors.Is(err, repo.ErrFailed) {
				t.Fatalf("%v\n%s", err, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the output lacks %q:\n%s", w, out.String())
				}
			}
			if strings.Contains(out.String(), "<!-- en:") {
				t.Errorf("a translation's marker reached the learner:\n%s", out.String())
			}
		})
	}

	var out bytes.Buffer
	err := run(ctx, []string{"workshop", "-C", root, "-lang", "fr", "hint", "01"}, &out, &out)
	if !errors.Is(err, repo.ErrUsage) || !strings.Contains(err.Error(), `-lang "fr": the workshop speaks en (English) and de (Deutsch)`) {
		t.Errorf("-lang fr: got %v, want a usage error listing the languages", err)
	}
}
