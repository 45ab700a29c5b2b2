package main

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
)

// The running system, cmd/fooddelivery, builds a lab's learner code only
// with that lab's build tag, learnerNN (its file learnerNN.go registers the
// lab's package at the lab's integration point). live adds the tags and
// runs the result; the tool itself never imports a lab.

// fooddeliveryPkg is the running system's main package.
const fooddeliveryPkg = "./cmd/fooddelivery"

// buildTimeout bounds one go build of the running system.
const buildTimeout = 5 * time.Minute

// learnerTag is the build tag that builds lab l's code into the running
// system.
func (l lab) learnerTag() string { return "learner" + l.Num() }

// runsInTheSystem reports whether the running system has an integration
// point for lab l (a learnerNN.go): the nine known labs do.
func (l lab) runsInTheSystem() bool { return slices.Contains(knownLabs, l.Name) }

// learnerFile matches an error in a lab's learnerNN.go in go build's
// output and captures the lab's number.
var learnerFile = regexp.MustCompile(`learner([0-9]{2})\.go:[0-9]+`)

// exitError makes main exit with the running system's own exit status.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

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

// live builds the running system with the learner code of the labs named
// in args (every lab you have started when none is named), runs it with
// those labs as learner and the rest of args, and waits for it to end,
// passing Ctrl-C on. A lab that does not compile is reported with its
// name, and live fails without starting anything.
func (ws *workspace) live(ctx context.Context, args []string) error {
	names, rest := liveArgs(args)
	all, err := ws.listLabs()
	if err != nil {
		return err
	}
	var labs []lab
	for _, name := range names {
		l, ok := findLab(all, name)
		switch {
		case !ok:
			return noLab(name, all)
		case !l.Present:
			fmt.Fprintf(ws.stderr, "lab %s is coming soon: it has no code to run yet\n", l.Name)
			return errFailed
		case !l.runsInTheSystem():
			fmt.Fprintf(ws.stderr, "lab %s has no integration point in the running system (cmd/fooddelivery has no learner%s.go)\n", l.Name, l.Num())
			return errFailed
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
		started, err := ws.startedLabs(ctx, all)
		if err != nil {
			return err
		}
		if len(started) == 0 {
			fmt.Fprintln(ws.stderr, "you have not started a lab yet: every lab file is as labs/starters.txt pins it. "+
				"Name the lab to run, for example: go run ./cmd/workshop live 01")
			return errFailed
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
		tags = append(tags, l.learnerTag())
	}
	fmt.Fprintf(ws.stderr, "building the system with your code of lab %s (go build -tags %s %s) ...\n",
		labNums(labs), strings.Join(tags, ","), fooddeliveryPkg)
	res := ws.goCmd(ctx, buildTimeout, "build", "-tags", strings.Join(tags, ","), "-o", bin, fooddeliveryPkg)
	if res.err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ws.reportBuildErrors(res.combined())
		return errFailed
	}
	// The learner flags go last, so that a -lab all=... among the user's
	// flags cannot silently replace the code live built in.
	return runSystem(ctx, bin, append(slices.Clone(rest), labFlags...), ws.stdout, ws.stderr)
}

// labNums lists labs by number: "05, 06".
func labNums(labs []lab) string {
	nums := make([]string, len(labs))
	for i, l := range labs {
		nums[i] = l.Num()
	}
	return strings.Join(nums, ", ")
}

// startedLabs returns the labs of the running system whose editable files
// differ from the pinned starter (labs/starters.txt): the labs the learner
// has started. It needs git to hash the files.
func (ws *workspace) startedLabs(ctx context.Context, all []lab) ([]lab, error) {
	manifest, ok, err := ws.readManifest()
	if err != nil {
		return nil, err
	}
	if !ok || !ws.inGitCheckout(ctx) {
		return nil, errors.New("live without a lab number runs the labs you have started, which takes git and labs/starters.txt to tell; " +
			"name the labs instead, for example: go run ./cmd/workshop live 01")
	}
	var started []lab
	for _, l := range all {
		if !l.Present || !l.runsInTheSystem() {
			continue
		}
		editable, _, err := ws.labFiles(l.Dir())
		if err != nil {
			return nil, err
		}
		ids, err := ws.hashObjects(ctx, editable)
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
func (ws *workspace) reportBuildErrors(lines []string) {
	byLab := map[string][]string{}
	var order, other []string
	pkgLab := "" // the lab of the package whose errors follow a "# package" line
	for _, line := range lines {
		if pkg, ok := strings.CutPrefix(line, "# "); ok {
			pkgLab = ""
			if _, dir, ok := strings.Cut(pkg, "/labs/"); ok && labDirName.MatchString(dir) {
				pkgLab = dir
			}
			continue
		}
		lab := pkgLab
		if m := learnerFile.FindStringSubmatch(line); m != nil {
			lab = knownLabName(m[1])
		}
		if lab == "" {
			other = append(other, line)
			continue
		}
		if _, seen := byLab[lab]; !seen {
			order = append(order, lab)
		}
		byLab[lab] = append(byLab[lab], line)
	}
	for _, lab := range order {
		fmt.Fprintf(ws.stderr, "lab %s does not compile:\n", lab)
		glue := false
		for _, line := range byLab[lab] {
			fmt.Fprintf(ws.stderr, "    %s\n", line)
			glue = glue || learnerFile.MatchString(line)
		}
		if glue {
			fmt.Fprintf(ws.stderr, "    (the system calls your labs/%s through cmd/fooddelivery/learner%s.go: keep the names and signatures the starter gave you)\n",
				lab, lab[:2])
		}
	}
	if len(other) > 0 {
		fmt.Fprintln(ws.stderr, "go build of the system failed:")
		for _, line := range other {
			fmt.Fprintf(ws.stderr, "    %s\n", line)
		}
	}
}

// knownLabName returns the name of known lab number num ("05" ->
// "05-breaker"), or "lab num" when there is none.
func knownLabName(num string) string {
	for _, name := range knownLabs {
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
				return errFailed
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
			return &exitError{code}
		}
		return errFailed // killed by a signal
	}
	return err
}

// learnerFlag is what tells the running system to use lab l's learner
// code: -lab NN=learner, or for lab 10, the game day, -plan learner (your
// plan, with the learner code of the other labs live built in).
func learnerFlag(l lab) []string {
	if l.Num() == "10" {
		return []string{"-plan", "learner"}
	}
	return []string{"-lab", l.Num() + "=learner"}
}
