// Package lab is the workshop's model of a lab, read from the repository:
// the labs present (List, Find), a lab's editable and test files (Files),
// its steps from its test names (TestSource, StepOf, StepResults), its
// README (ParseReadme: sections, step headings, words) and HINTS.md
// (ParseHints), the pinned starter (labs/starters.txt: ParseManifest, Pin,
// PristineStarter), the reference solution's layout and its mutants
// (Mutants, ParseMutant, Mutant.Apply), the running system's build tags
// (LearnerTag), and the outcome of one run of a lab's tests (OutcomeOf, and
// the game day's Score). The conventions it reads are listed in the
// command's documentation (cmd/workshop) and in CONTRIBUTING.md.
//
// It decides nothing about what a learner or a maintainer is told, and
// prints nothing but what Pin, the maintainer's pin command, reports of
// the starters it pinned. It never imports a lab or a solution.
package lab
