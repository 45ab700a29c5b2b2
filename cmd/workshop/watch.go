package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce is how long watch waits after the last change to a lab's
// files before it runs the tests: an editor's save is several events (a
// temporary file written, renamed over the old one, its mode set).
const watchDebounce = 300 * time.Millisecond

// watchHelp lists watch's typed commands.
const watchHelp = "Type hint, list (every lab, re-checked), solution, help or quit, then Enter; Enter alone re-runs."

// watch is "watch [NN] [--manual]": it runs a lab's tests, shows the steps
// passed and the first failing step's story, and runs them again whenever
// one of the lab's .go files is saved (fsnotify, on the lab's directory:
// editors save by writing a new file and renaming it, which a watch on the
// file itself would miss). When the lab passes it says so, offers the
// reference, and moves on to the next lab that does not pass. Lines typed
// on stdin are commands (watchHelp). With manual, or where the file system
// sends no change notifications (WSL on /mnt, network drives), Enter
// re-runs instead. It returns when told to quit, at the end of stdin in
// manual mode, or when ctx ends.
func (ws *workspace) watch(ctx context.Context, arg string, manual bool) error {
	labs, infos, err := ws.presentLabs()
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		fmt.Fprintln(ws.stdout, "There are no labs to watch yet.")
		return nil
	}
	w := newProgress(ws.stdout)
	current := -1
	if arg != "" {
		for i, info := range infos {
			if l, ok := findLab([]lab{info.lab}, arg); ok && l.Name == info.Name {
				current = i
			}
		}
		if current < 0 {
			return noLab(arg, labs)
		}
	} else {
		fmt.Fprintln(w, "Finding the first lab that does not pass yet...")
		outcomes, err := ws.runLabs(ctx, infos, w, func(io.Writer, labOutcome, bool) {})
		if err != nil {
			return err
		}
		for i, info := range infos {
			if !outcomes[info.Name].done() {
				current = i
				break
			}
		}
		if current < 0 {
			fmt.Fprintln(w, "Every lab passes. Well done! go run ./cmd/workshop solution NN compares your code with the reference.")
			return nil
		}
	}

	var watcher *fsnotify.Watcher
	if !manual {
		watcher, err = fsnotify.NewWatcher()
		if err == nil {
			err = watcher.Add(ws.abs(infos[current].Dir()))
		}
		if err != nil {
			fmt.Fprintf(w, "Cannot watch for file changes (%v): running in manual mode; press Enter to re-run.\n", err)
			if watcher != nil {
				watcher.Close()
			}
			watcher, manual = nil, true
		} else {
			defer watcher.Close()
		}
	}
	// Typed commands, read on their own goroutine; closed at end of input.
	commands := make(chan string)
	stopped := make(chan struct{}) // watch has returned: nobody reads commands
	defer close(stopped)
	go func() {
		defer close(commands)
		for {
			line, err := ws.input().ReadString('\n')
			if line != "" || err == nil {
				select {
				case commands <- strings.ToLower(strings.TrimSpace(line)):
				case <-ctx.Done():
					return
				case <-stopped:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if watcher != nil {
		events, watchErrs = watcher.Events, watcher.Errors
	}
	var debounce <-chan time.Time
	// run runs the lab's tests while still listening: quit ends watch at
	// once, and a save or an Enter cancels the run (killing its test
	// binaries) to start again. It reports whether the run completed and
	// whether to quit.
	run := func(info labInfo, clear bool) (o labOutcome, completed, quit bool, err error) {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		type result struct {
			o   labOutcome
			err error
		}
		done := make(chan result, 1)
		go func() {
			o, err := ws.watchRun(runCtx, w, info, clear)
			done <- result{o, err}
		}()
		stop := func() { cancel(); <-done }
		for {
			select {
			case r := <-done:
				if runCtx.Err() != nil {
					return labOutcome{}, false, ctx.Err() != nil, nil
				}
				return r.o, true, false, r.err
			case <-ctx.Done():
				stop()
				return labOutcome{}, false, true, nil
			case ev, ok := <-events:
				if ok && strings.HasSuffix(ev.Name, ".go") {
					stop()
					debounce = time.After(watchDebounce)
					return labOutcome{}, false, false, nil
				}
			case cmd, ok := <-commands:
				switch {
				case !ok && manual, cmd == "q", cmd == "quit", cmd == "exit":
					stop()
					return labOutcome{}, false, true, nil
				case !ok:
					commands = nil
				case cmd == "":
					stop()
					return labOutcome{}, false, false, nil
				default:
					fmt.Fprintf(w, "(the tests are running: type %s again when they end; quit and Enter work now)\n", cmd)
				}
			}
		}
	}
	passed := -1 // the lab that passed last, for "solution"
	rerun, clear := true, true
	for {
		if rerun {
			rerun = false
			info, err := ws.labInfo(infos[current].lab)
			if err != nil {
				return err
			}
			infos[current] = info
			o, completed, quit, err := run(info, clear)
			switch {
			case err != nil:
				return err
			case quit:
				return nil
			case !completed:
				rerun = debounce == nil // an Enter: again now; a save: after the debounce
				continue
			}
			clear = true
			if o.done() {
				passed = current
				fmt.Fprintf(w, "\nLab %s passes. Well done! Type solution and Enter to compare your code with the reference; %s says what production libraries do.\n",
					info.Num(), path.Join(info.Dir(), "PRODUCTION.md"))
				next := ws.nextUnfinished(ctx, w, infos, current)
				if next < 0 {
					fmt.Fprintln(w, "Every lab passes: the workshop is done. Type quit and Enter to leave.")
					continue
				}
				if watcher != nil {
					watcher.Remove(ws.abs(infos[current].Dir()))
					if err := watcher.Add(ws.abs(infos[next].Dir())); err != nil {
						return fmt.Errorf("watching %s: %w", infos[next].Dir(), err)
					}
				}
				current = next
				fmt.Fprintf(w, "On to lab %s %s.\n\n", infos[current].Num(), infos[current].Title())
				rerun, clear = true, false // keep the congratulations on screen
				continue
			}
			ws.watchFooter(w, info, manual)
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return errors.New("the file watcher stopped")
			}
			if strings.HasSuffix(ev.Name, ".go") {
				debounce = time.After(watchDebounce)
			}
		case err := <-watchErrs:
			fmt.Fprintf(w, "file watcher: %v\n", err)
		case <-debounce:
			debounce = nil
			rerun = true
		case cmd, ok := <-commands:
			if !ok {
				if manual {
					return nil
				}
				commands = nil // no more input; keep watching the files
				continue
			}
			quit, err := ws.watchCommand(ctx, w, cmd, commands, infos, current, passed)
			if err != nil || quit {
				return err
			}
			rerun = cmd == ""
		}
	}
}

// watchRun runs one lab and shows every step, with the first failing
// step's story. On a terminal, and when clear, it clears the screen first.
func (ws *workspace) watchRun(ctx context.Context, w *progress, info labInfo, clear bool) (labOutcome, error) {
	if w.terminal && clear {
		fmt.Fprint(w, "\033[H\033[2J")
	}
	outcomes, err := ws.runLabs(ctx, []labInfo{info}, w, func(io.Writer, labOutcome, bool) {})
	if err != nil {
		return labOutcome{}, err
	}
	o := outcomes[info.Name]
	fmt.Fprintf(w, "Lab %s %s (%s)\n\n", info.Num(), info.Title(), time.Now().Format("15:04:05"))
	if o.compileErrs != nil {
		fmt.Fprintln(w, "does not compile:")
		for _, line := range firstLines(o.compileErrs, 12) {
			fmt.Fprintf(w, "    %s\n", line)
		}
		return o, nil
	}
	fmt.Fprintf(w, "%d of %d steps passed\n", o.passed(), len(o.steps))
	told := false
	for _, s := range o.steps {
		fmt.Fprintf(w, "  %-8s %s\n", s.State, info.stepTitle(s.N))
		if s.State == stepFailing && !told {
			told = true
			t := s.Failed[0]
			fmt.Fprintf(w, "    %s failed:\n", t.Name)
			for _, line := range firstLines(t.failureLines(), 12) {
				fmt.Fprintf(w, "        %s\n", strings.TrimLeft(line, " \t"))
			}
			fmt.Fprintf(w, "    Read %s\n", info.stepLink(s.N))
		}
	}
	return o, nil
}

// watchFooter says what watch waits for.
func (ws *workspace) watchFooter(w io.Writer, info labInfo, manual bool) {
	fmt.Fprintln(w)
	if manual {
		fmt.Fprintf(w, "Manual mode: save your changes, then press Enter to re-run. %s\n", watchHelp)
	} else {
		fmt.Fprintf(w, "Watching %s/: save a file to re-run. %s\n", info.Dir(), watchHelp)
	}
}

// nextUnfinished returns the index of the first lab after current (then
// from the start) that does not pass, or -1.
func (ws *workspace) nextUnfinished(ctx context.Context, w *progress, infos []labInfo, current int) int {
	outcomes, err := ws.runLabs(ctx, infos, w, func(io.Writer, labOutcome, bool) {})
	if err != nil {
		return -1
	}
	for k := 1; k < len(infos); k++ {
		i := (current + k) % len(infos)
		if !outcomes[infos[i].Name].done() {
			return i
		}
	}
	return -1
}

// watchCommand runs one typed command; it reports whether to quit.
// A confirmation is the next line from commands.
func (ws *workspace) watchCommand(ctx context.Context, w *progress, cmd string, commands <-chan string, infos []labInfo, current, passed int) (bool, error) {
	switch cmd {
	case "":
		return false, nil
	case "q", "quit", "exit":
		return true, nil
	case "h", "hint":
		fmt.Fprintln(w)
		err := ws.showHint(ctx, w, infos[current].lab, false, true)
		if errors.Is(err, errFailed) {
			err = nil // it said why
		}
		return false, err
	case "help", "?":
		fmt.Fprintln(w, watchHelp)
		return false, nil
	case "l", "list", "c", "check", "all":
		fmt.Fprintln(w)
		outcomes, err := ws.runLabs(ctx, infos, w, func(io.Writer, labOutcome, bool) {})
		if err != nil {
			return false, err
		}
		for _, info := range infos {
			printLabLine(w, outcomes[info.Name])
		}
		fmt.Fprintln(w, watchHelp)
		return false, nil
	case "s", "solution":
		l := infos[current].lab
		if passed >= 0 {
			l = infos[passed].lab
		} else {
			fmt.Fprintf(w, "Lab %s does not pass yet: this shows the answer to every step. Show it anyway? [y/N] ", l.Num())
			select {
			case answer := <-commands:
				if answer != "y" && answer != "yes" {
					fmt.Fprintln(w, "Nothing shown.")
					return false, nil
				}
			case <-ctx.Done():
				return true, nil
			}
		}
		return false, ws.showSolution(w, l)
	default:
		fmt.Fprintf(w, "Unknown command %q. %s\n", cmd, watchHelp)
		return false, nil
	}
}

// printLabLine prints a lab's state on one line.
func printLabLine(w io.Writer, o labOutcome) {
	l := o.info
	switch {
	case o.compileErrs != nil:
		fmt.Fprintf(w, "Lab %s %-16s does not compile\n", l.Num(), l.Title())
	default:
		fmt.Fprintf(w, "Lab %s %-16s %d of %d steps passed\n", l.Num(), l.Title(), o.passed(), len(o.steps))
	}
}
