// Command workshop is the learner's and instructor's tool for the resilience
// workshop: it shows progress, checks one lab, gives hints one at a time,
// runs the whole system with a learner's code, verifies the lab contract
// (CONTRIBUTING.md at the repository's root, whose clause numbers verify
// cites) and pins the starter files.
//
// Usage, from anywhere inside the repository:
//
//	go run ./cmd/workshop doctor        is this machine ready? checks Go, the module cache, a C compiler, the port, the disk; builds every lab
//	go run ./cmd/workshop               status of every lab and the next thing to do
//	go run ./cmd/workshop status -json  the same as a results.json (Exercism test runner, version 3; see class.Results)
//	go run ./cmd/workshop gather DIR    merge learners' status -json files into a class table (-csv out.csv, -labs 01,03)
//	go run ./cmd/workshop check 01      run lab 01's tests, summarised step by step
//	go run ./cmd/workshop hint 01       the next hint for lab 01's first failing step; "hint 01 --reset" starts again
//	go run ./cmd/workshop live 05       run the whole system with your labs/05-breaker code at its integration point
//	go run ./cmd/workshop admin load 20 send a change to the running system's admin API
//	go run ./cmd/workshop verify        the instructor's and CI's check of every lab and the project
//	go run ./cmd/workshop mutant 05     list lab 05's mutants; "mutant 05 NAME" shows one and tests it
//	go run ./cmd/workshop pin           rewrite labs/starters.txt from the current lab files
//
// A leading "-C dir" runs the tool on the repository at dir instead of the one
// containing the working directory. "-lang de" (or GOPHEREATS_LANG=de, or a
// German locale) makes the learner's commands speak German (package i18n).
//
// The tool never imports a lab or a solution: it runs the go command as a
// subprocess (always with -timeout) and reads `go test -json` events, so a lab
// that does not compile can never break it.
//
// # Repository conventions the tool relies on
//
// CONTRIBUTING.md states them as numbered clauses for people writing labs;
// what follows is what the tool reads.
//
// Labs. A lab is a directory labs/NN-name/ (NN two digits). The nine known labs
// are listed in lab.Known; a known lab without a directory is shown as
// "coming soon", and an unknown labs/NN-name directory is shown too. A lab's
// editable files are the non-test .go files directly in its directory.
//
// Steps. Lab tests are top-level functions named TestStep<N><Name> (N counts
// from 1, Name starts with an upper-case letter); a step may have several
// tests; the last step is TestStep<N>Experiment. A step passes when every one
// of its tests passed (subtests are folded into their top-level test). Test
// names are read from the lab's _test.go files with go/parser, so steps are
// known even when the lab does not compile or a test crashes the binary.
//
// README. Each lab's README.md has level-2 sections, in this order: The story,
// The pattern, Steps, Hints, Experiment, In production. Inside
// "## Steps" each step is a level-3 heading "### Step N: title" (the colon may
// also be a period or a dash). The title is what status prints as the next
// thing to do, with a link to the heading's GitHub anchor (README.md#step-2-title).
// "## Hints" holds only a link to HINTS.md, and "## In production" a link to
// PRODUCTION.md; the rest has at most 2,000 words outside code and tables.
//
// Hints. Each lab's hints are in labs/NN-name/HINTS.md (the format is
// documented in package lab, above lab.HintFile): a level-2 heading "## Step N" per step,
// in increasing order, and under it a level-3 heading per hint whose text is
// the symptom the hint answers (a failure message), its body the Markdown
// below, the gentlest hint first. hint runs the lab's tests, finds the first
// step that does not pass and prints that step's next hint not yet shown,
// preferring a chain whose heading quotes the failure on the screen.
// What was shown is remembered per repository (its absolute path), lab and
// step in gophereats-workshop/hints.json under the user's cache directory
// (else their config directory), never in the repository; "hint NN --reset"
// forgets it for lab NN. HINTS.md is not a Go file: it is not an editable
// file of the lab.
//
// Solutions. solutions/NN-name/ holds files with exactly the lab's editable
// file names, no _test.go file anywhere below it, and NOTES.md. Each file
// solutions/NN-name/mutants/<pitfall>.txtar is one mutant: old -> new
// snippets of the reference's files (the format is documented on type
// lab.Mutant and in CONTRIBUTING.md, clause 6); verify applies them to the
// reference, overlays the result on the lab and runs the lab's tests.
//
// Running system. cmd/fooddelivery builds lab NN's code in only with the
// build tag learnerNN (its file learnerNN.go); live builds it with the tags
// of the labs named (or of every lab whose files differ from the manifest)
// and runs it with -lab NN=learner for each, after the user's own flags so
// that no -lab all=... replaces the learner's code, and verify builds
// it with every lab's tag over the pristine starters.
//
// Starter manifest. labs/starters.txt pins the pristine starter: one line per
// lab editable file, "<git blob id> <slash path from the repository root>",
// sorted by path; blank lines and lines starting with # are ignored. `pin`
// writes it with `git hash-object`. verify compares each working file's
// `git hash-object` with the manifest: an equal file is used as is, a
// different or missing one is taken from `git cat-file blob <id>` and laid
// over the working copy with -overlay (the working tree is never modified).
// Without git, or outside a git checkout, the starter checks are skipped with
// a notice. An editable file missing from the manifest is a failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/admin"
	"github.com/gophereats/resilience/cmd/workshop/internal/class"
	"github.com/gophereats/resilience/cmd/workshop/internal/contract"
	"github.com/gophereats/resilience/cmd/workshop/internal/doctor"
	"github.com/gophereats/resilience/cmd/workshop/internal/i18n"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/learner"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

const usage = `usage: go run ./cmd/workshop [-C dir] [-lang en|de] [command]

-C dir runs the tool on the workshop repository at dir instead of the one
holding the current directory. NN is a lab's number or name: 05 or 05-breaker.
-lang de speaks German in status, watch, check, hint, reset and solution, and
reads each lab's README.de.md and HINTS.de.md (also GOPHEREATS_LANG=de, or a
German locale: LANG=de_DE.UTF-8); the tests' stories stay English.

Learners:
  doctor [-addr host:port]
              is this machine ready for the workshop? checks Go, that every module is in the module
              cache (for offline use), a C compiler (for -race), the gateway's port and the free disk,
              then builds every lab so that status answers in seconds; run it the night before
  status      every lab, step by step, and the next thing to do (the default); each lab is shown
              as its tests finish, unchanged labs at once
  status -json [-name NAME]
              the same as JSON for the instructor: Exercism's results.json version 3, one test per
              step, with learner (NAME, by default your user name), commit and ran_at added
  watch [NN] [--manual]
              re-run lab NN (the first lab that does not pass) whenever you save one of its files;
              type hint, list, check, solution or quit and Enter while it runs; --manual: Enter re-runs
              (for file systems that send no change notifications: WSL on /mnt, network drives)
  check NN    run one lab's tests (with -race where available) and summarise them step by step
  hint NN [--reset]
              the next hint for the lab's first failing step, one per call, the gentlest first
              (labs/NN-name/HINTS.md has them all); --reset forgets the hints shown for lab NN
  solution NN [-y]
              the reference solution against your code, then its notes (asks first if the lab
              does not pass yet; -y does not ask)
  reset NN [-y]
              put the lab's starter files back, after copying yours to .workshop/backups/ (-y: no question)
  live [NN...] [flags]
              build the food-delivery system with your code of labs NN (every lab you have started
              when none is named) and run it on 127.0.0.1, those labs as learner; the flags after the
              numbers (or after --) go to the system: live 05 -fault payment=hang, live 05 -- -h
  admin ...   change the running system without quoting JSON: admin fault payment=hang, admin load 20,
              admin scenario payment-down, admin unfault all (admin alone lists the commands)

Instructors and people writing labs:
  gather [-csv out.csv] [-labs 01,03,05] FILE|DIR...
              merge the learners' status -json files (or a GitHub Classroom export) into a class table:
              each lab's steps passed, where each learner is stuck (-labs: among the agenda's labs
              only), and how long since their last pass
  verify      check the lab contract (CONTRIBUTING.md) for every lab, then vet, gofmt and test the project
  verify NN   check the lab contract for lab NN only
  mutant NN [name]
              list lab NN's mutants, or show one as a diff against the reference and run the lab's
              tests but the experiment against it
  pin         rewrite labs/starters.txt from the current lab starter files
  help        this text (also -h, --help)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	var status *learner.ExitError
	switch {
	case err == nil:
	case errors.Is(err, repo.ErrUsage):
		var u *repo.UsageError
		if errors.As(err, &u) {
			fmt.Fprintf(os.Stderr, "workshop: %s\n(go run ./cmd/workshop help lists the commands)\n", u.Msg)
		} else {
			fmt.Fprint(os.Stderr, usage)
		}
		os.Exit(2)
	case errors.Is(err, repo.ErrFailed):
		os.Exit(1)
	case errors.Is(err, context.Canceled):
		os.Exit(130) // interrupted: the shell already shows ^C
	case errors.As(err, &status):
		os.Exit(status.Code) // the running system's own (live)
	default:
		fmt.Fprintf(os.Stderr, "workshop: %v\n", err)
		os.Exit(1)
	}
}

// clock is what gather measures the learners' ages from; the golden
// test fixes it.
var clock = time.Now

// run is the whole program; args[0] is the program name.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("workshop", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("C", "", "run on the repository at `dir`")
	langFlag := fs.String("lang", "", "the `language` of the learner's commands: en or de")
	if len(args) == 0 {
		return repo.ErrUsage
	}
	if err := fs.Parse(args[1:]); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return nil
	} else if err != nil {
		return repo.BadUsage("%v", err)
	}
	rest := fs.Args()
	cmd := "status"
	var statusOpts class.StatusOptions
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	// Validate arguments before touching the repository, so usage errors are
	// reported the same way everywhere.
	if cmd != "live" && cmd != "admin" && slices.ContainsFunc(rest, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	var yes, manual bool
	var doctorOpts doctor.Options
	switch cmd {
	case "status":
		var err error
		if statusOpts, err = class.ParseStatusFlags(rest); err != nil {
			return err
		}
		rest = nil
	case "doctor":
		var err error
		if doctorOpts, err = doctor.ParseFlags(rest); err != nil {
			return err
		}
		rest = nil
	case "gather": // reads the files named; needs no repository
		return class.GatherAt(clock, rest, stdout, stderr)
	case "hint":
		if _, _, ok := learner.HintArgs(rest); !ok {
			return repo.BadUsage("hint takes a lab number and optionally --reset, for example: go run ./cmd/workshop hint 05")
		}
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "admin": // talks to a running system; needs no repository
		return admin.Admin(ctx, rest, stdout)
	case "live":
	case "reset", "solution":
		rest, yes = takeFlag(rest, "-y", "--yes")
	case "watch":
		rest, manual = takeFlag(rest, "--manual", "-manual")
	}
	if err := checkArgs(cmd, rest); cmd != "hint" && err != nil {
		return err
	}

	lang, err := i18n.Choose(*langFlag, os.Getenv)
	if err != nil {
		return repo.BadUsage("%v", err)
	}
	ws, err := repo.Open(*dir, stdout, stderr)
	if err != nil {
		return err
	}
	switch cmd { // the learner's commands speak the learner's language
	case "status", "watch", "check", "hint", "reset", "solution":
		if !statusOpts.Json {
			ws.P = i18n.New(lang)
		}
	}
	switch cmd {
	case "status":
		if statusOpts.Json {
			return class.StatusJSON(ctx, ws, statusOpts.Name)
		}
		return learner.Status(ctx, ws)
	case "doctor":
		return doctor.Doctor(ctx, ws, doctorOpts)
	case "check":
		return learner.Check(ctx, ws, rest[0])
	case "watch":
		return learner.Watch(ctx, ws, optional(rest), manual)
	case "reset":
		return learner.Reset(ctx, ws, rest[0], yes)
	case "solution":
		return learner.Solution(ctx, ws, rest[0], yes)
	case "hint":
		return learner.Hint(ctx, ws, rest)
	case "live":
		return learner.Live(ctx, ws, rest)
	case "mutant":
		return contract.Mutant(ctx, ws, rest)
	case "verify":
		return contract.Verify(ctx, ws, optional(rest))
	default: // "pin"
		return lab.Pin(ctx, ws)
	}
}

// checkArgs says what is wrong with a command's arguments, or nil.
func checkArgs(cmd string, rest []string) error {
	var min, max int // how many arguments the command takes
	switch cmd {
	case "status", "pin", "doctor":
	case "live":
		return nil
	case "verify", "watch":
		max = 1
	case "check", "reset", "solution":
		min, max = 1, 1
	case "mutant":
		min, max = 1, 2
	default:
		return repo.BadUsage("unknown command %q", cmd)
	}
	switch {
	case len(rest) < min:
		return repo.BadUsage("%s needs a lab number, for example: go run ./cmd/workshop %s 05", cmd, cmd)
	case len(rest) > max:
		if max == 0 {
			return repo.BadUsage("%s takes no arguments, got %q", cmd, strings.Join(rest, " "))
		}
		return repo.BadUsage("%s takes one lab at most, got %q", cmd, strings.Join(rest, " "))
	}
	for _, a := range rest {
		if strings.HasPrefix(a, "-") {
			return repo.BadUsage("%s: unknown flag %s", cmd, a)
		}
	}
	return nil
}

// takeFlag removes every occurrence of the named flags from args and
// reports whether there was one.
func takeFlag(args []string, names ...string) ([]string, bool) {
	var out []string
	found := false
	for _, a := range args {
		if slices.Contains(names, a) {
			found = true
			continue
		}
		out = append(out, a)
	}
	return out, found
}

// optional returns the only argument, or "" when there is none.
func optional(rest []string) string {
	if len(rest) == 1 {
		return rest[0]
	}
	return ""
}
