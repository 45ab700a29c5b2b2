package learner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// The running system, cmd/fooddelivery, builds a lab's learner code only
// with that lab's build tag, learnerNN (its file learnerNN.go registers the
// lab's package at the lab's integration point). live adds the tags and
// runs the result; the tool itself never imports a lab.

// learnerFile matches an error in a lab's learnerNN.go in go build's
// output and captures the lab's number.
var learnerFile = regexp.MustCompile(`learner([0-9]{2})\.go:[0-9]+`)

// ExitError makes main exit with the running system's own exit status.
type ExitError struct{ Code int }

// Error says which status the system exited with.
func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// liveArgs splits live's arguments: the labs first ("05", "5" or
// "05-breaker"), then everything from the first flag (or after "--") for
// the running system.
func liveArgs(args []string) (labs, rest []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:]
		}
		if strings.HasPrefix(a, "-") {
			return args[:i], args[i:]
		}
	}
	return args, nil
}

// Live builds the running system with the learner code of the labs named
// in args (every lab you have started when none is named), runs it with
// those labs as learner and the rest of args, and waits for it to end,
// passing Ctrl-C on. A lab that does not compile is reported with its
// name, and live fails without starting anything.
func Live(ctx context.Context, ws *repo.Workspace, args []string) error {
	names, rest := liveArgs(args)
	all, err := lab.List(ws)
	if err != nil {
		return err
	}
	var labs []lab.Lab
	for _, name := range names {
		l, ok := lab.Find(all, name)
		switch {
		case !ok:
			return lab.NoLab(name, all)
		case !l.Present:
			fmt.Fprintf(ws.Stderr, "lab %s is coming soon: it has no code to run yet\n", l.Name)
			return repo.ErrFailed
		case !l.RunsInTheSystem():
			fmt.Fprintf(ws.Stderr, "lab %s has no integration point in the running system (cmd/fooddelivery has no learner%s.go)\n", l.Name, l.Num())
			return repo.ErrFailed
		}
		if !slices.Contains(labs, l) {
			labs = append(labs, l)
		}
	}
	labFlags := []string{}
	for _, l := range labs {
		labFlags = append(labFlags, learnerFlag(l)...)
	}
	if len(labs) == 0 {
		started, err := startedLabs(ctx, ws, all)
		if err != nil {
			return err
		}
		if len(started) == 0 {
			fmt.Fprintln(ws.Stderr, "you have not started a lab yet: every lab file is as labs/starters.txt pins it. "+
				"Name the lab to run, for example: go run ./cmd/workshop live 01")
			return repo.ErrFailed
		}
		labs = started
		// Every started lab runs as learner; where two of them meet at one
		// place, the running system composes them and its banner says how.
		for _, l := range labs {
			labFlags = append(labFlags, learnerFlag(l)...)
		}
	}

	tmp, err := os.MkdirTemp("", "workshop-live-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "fooddelivery")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	var tags []string
	for _, l := range labs {
		tags = append(tags, l.LearnerTag())
	}
	fmt.Fprintf(ws.Stderr, "building the system with your code of lab %s (go build -tags %s %s) ...\n",
		labNums(labs), strings.Join(tags, ","), lab.FooddeliveryPkg)
	res := ws.GoCmd(ctx, lab.BuildTimeout, "build", "-tags", strings.Join(tags, ","), "-o", bin, lab.FooddeliveryPkg)
	if res.Err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reportBuildErrors(ws, res.Combined())
		return repo.ErrFailed
	}
	// The learner flags go last, so that a -lab all=... among the user's
	// flags cannot silently replace the code live built in.
	return runSystem(ctx, bin, append(slices.Clone(rest), labFlags...), ws.Stdout, ws.Stderr)
}

// labNums lists labs by number: "05, 06".
func labNums(labs []lab.Lab) string {
	nums := make([]string, len(labs))
	for i, l := range labs {
		nums[i] = l.Num()
	}
	return strings.Join(nums, ", ")
}

// startedLabs returns the labs of the running system whose editable files
// differ from the pinned starter (labs/starters.txt): the labs the learner
// has started. It needs git to hash the files.
func startedLabs(ctx context.Context, ws *repo.Workspace, all []lab.Lab) ([]lab.Lab, error) {
	manifest, ok, err := lab.ReadManifest(ws)
	if err != nil {
		return nil, err
	}
	if !ok || !ws.InGitCheckout(ctx) {
		return nil, errors.New("live without a lab number runs the labs you have started, which takes git and labs/starters.txt to tell; " +
			"name the labs instead, for example: go run ./cmd/workshop live 01")
	}
	var started []lab.Lab
	for _, l := range all {
		if !l.Present || !l.RunsInTheSystem() {
			continue
		}
		editable, _, err := lab.Files(ws, l.Dir())
		if err != nil {
			return nil, err
		}
		ids, err := ws.HashObjects(ctx, editable)
		if err != nil {
			return nil, err
		}
		pinned := 0
		changed := false
		for f, id := range manifest {
			if strings.HasPrefix(f, l.Dir()+"/") {
				pinned++
				changed = changed || ids[f] != id
			}
		}
		if changed || pinned != len(editable) {
			started = append(started, l)
		}
	}
	return started, nil
}

// reportBuildErrors prints the output of a failed go build of the running
// system, grouped by the lab each error belongs to: errors in a lab's
// package, and errors in its learnerNN.go (the lab's code no longer has
// the names and signatures the system calls). Other lines follow as they
// are.
func reportBuildErrors(ws *repo.Workspace, lines []string) {
	byLab := map[string][]string{}
	var order, other []string
	pkgLab := "" // the lab of the package whose errors follow a "# package" line
	for _, line := range lines {
		if pkg, ok := strings.CutPrefix(line, "# "); ok {
			pkgLab = ""
			if _, dir, ok := strings.Cut(pkg, "/labs/"); ok && lab.DirName.MatchString(dir) {
				pkgLab = dir
			}
			continue
		}
		Lab := pkgLab
		if m := learnerFile.FindStringSubmatch(line); m != nil {
			Lab = knownLabName(m[1])
		}
		if Lab == "" {
			other = append(other, line)
			continue
		}
		if _, seen := byLab[Lab]; !seen {
			order = append(order, Lab)
		}
		byLab[Lab] = append(byLab[Lab], line)
	}
	for _, Lab := range order {
		fmt.Fprintf(ws.Stderr, "lab %s does not compile:\n", Lab)
		glue := false
		for _, line := range byLab[Lab] {
			fmt.Fprintf(ws.Stderr, "    %s\n", line)
			glue = glue || learnerFile.MatchString(line)
		}
		if glue {
			fmt.Fprintf(ws.Stderr, "    (the system calls your labs/%s through cmd/fooddelivery/learner%s.go: keep the names and signatures the starter gave you)\n",
				Lab, Lab[:2])
		}
	}
	if len(other) > 0 {
		fmt.Fprintln(ws.Stderr, "go build of the system failed:")
		for _, line := range other {
			fmt.Fprintf(ws.Stderr, "    %s\n", line)
		}
	}
}

// knownLabName returns the name of known lab number num ("05" ->
// "05-breaker"), or "lab num" when there is none.
func knownLabName(num string) string {
	for _, name := range lab.Known {
		if strings.HasPrefix(name, num+"-") {
			return name
		}
	}
	return num
}

// runSystem runs the built system with args, its standard streams the
// tool's, and returns when it ends: nil when it exited 0, an *exitError
// with its status otherwise. When ctx ends (Ctrl-C), the system gets a
// moment to stop by itself (in a terminal, Ctrl-C reaches it too), then
// an interrupt, then is killed.
func runSystem(ctx context.Context, bin string, args []string, stdout, stderr io.Writer) error {
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitStatus(err)
	case <-ctx.Done():
	}
	for _, step := range []func(){
		func() {},
		func() {
			if cmd.Process.Signal(os.Interrupt) != nil { // no interrupt on Windows
				cmd.Process.Kill()
			}
		},
		func() { cmd.Process.Kill() },
	} {
		step()
		select {
		case err := <-done:
			if ctx.Err() != nil && err != nil {
				return repo.ErrFailed
			}
			return exitStatus(err)
		case <-time.After(3 * time.Second):
		}
	}
	return exitStatus(<-done)
}

// exitStatus turns the error of a finished process into the tool's.
func exitStatus(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if code := ee.ExitCode(); code > 0 {
			return &ExitError{code}
		}
		return repo.ErrFailed // killed by a signal
	}
	return err
}

// learnerFlag is what tells the running system to use lab l's learner
// code: -lab NN=learner, or for lab 10, the game day, -plan learner (your
// plan, with the learner code of the other labs live built in).
func learnerFlag(l lab.Lab) []string {
	if l.Num() == "10" {
		return []string{"-plan", "learner"}
	}
	return []string{"-lab", l.Num() + "=learner"}
}
