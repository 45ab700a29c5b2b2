package learner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/labrun"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/term"
)

// watchDebounce is how long watch waits after the last change to a lab's
// files before it runs the tests: an editor's save is several events (a
// temporary file written, renamed over the old one, its mode set).
const watchDebounce = 300 * time.Millisecond

// watchHelp lists watch's typed commands.
const watchHelp = "Type hint, list (every lab, re-checked), solution, help or quit, then Enter; Enter alone re-runs."

// Watch is "watch [NN] [--manual]": it runs a lab's tests, shows the steps
// passed and the first failing step's story, and runs them again whenever
// one of the lab's .go files is saved (fsnotify, on the lab's directory:
// editors save by writing a new file and renaming it, which a watch on the
// file itself would miss). When the lab passes it says so, offers the
// reference, and moves on to the next lab that does not pass. Lines typed
// on stdin are commands (watchHelp). With manual, or where the file system
// sends no change notifications (WSL on /mnt, network drives), Enter
// re-runs instead. It returns when told to quit, at the end of stdin in
// manual mode, or when ctx ends.
func Watch(ctx context.Context, ws *repo.Workspace, arg string, manual bool) error {
	p := ws.P
	labs, infos, err := labrun.Present(ws)
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		p.Fprintln(ws.Stdout, "There are no labs to watch yet.")
		return nil
	}
	w := term.New(ws.Stdout)
	current := -1
	if arg != "" {
		for i, info := range infos {
			if l, ok := lab.Find([]lab.Lab{info.Lab}, arg); ok && l.Name == info.Name {
				current = i
			}
		}
		if current < 0 {
			return lab.NoLab(arg, labs)
		}
	} else {
		p.Fprintln(w, "Finding the first lab that does not pass yet...")
		outcomes, err := labrun.Run(ctx, ws, infos, w, func(io.Writer, lab.Outcome, bool) {})
		if err != nil {
			return err
		}
		for i, info := range infos {
			if !outcomes[info.Name].Done() {
				current = i
				break
			}
		}
		if current < 0 {
			p.Fprintln(w, "Every lab passes. Well done! go run ./cmd/workshop solution NN compares your code with the reference.")
			return nil
		}
	}

	var watcher *fsnotify.Watcher
	if !manual {
		watcher, err = fsnotify.NewWatcher()
		if err == nil {
			err = watcher.Add(ws.Abs(infos[current].Dir()))
		}
		if err != nil {
			p.Fprintf(w, "Cannot watch for file changes (%v): running in manual mode; press Enter to re-run.\n", err)
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
			line, err := ws.Input().ReadString('\n')
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
	run := func(info lab.Info, clear bool) (o lab.Outcome, completed, quit bool, err error) {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		type result struct {
			o   lab.Outcome
			err error
		}
		done := make(chan result, 1)
		go func() {
			o, err := watchRun(runCtx, ws, w, info, clear)
			done <- result{o, err}
		}()
		stop := func() { cancel(); <-done }
		for {
			select {
			case r := <-done:
				if runCtx.Err() != nil {
					return lab.Outcome{}, false, ctx.Err() != nil, nil
				}
				return r.o, true, false, r.err
			case <-ctx.Done():
				stop()
				return lab.Outcome{}, false, true, nil
			case ev, ok := <-events:
				if ok && strings.HasSuffix(ev.Name, ".go") {
					stop()
					debounce = time.After(watchDebounce)
					return lab.Outcome{}, false, false, nil
				}
			case cmd, ok := <-commands:
				switch {
				case !ok && manual, cmd == "q", cmd == "quit", cmd == "exit":
					stop()
					return lab.Outcome{}, false, true, nil
				case !ok:
					commands = nil
				case cmd == "":
					stop()
					return lab.Outcome{}, false, false, nil
				default:
					p.Fprintf(w, "(the tests are running: type %s again when they end; quit and Enter work now)\n", cmd)
				}
			}
		}
	}
	passed := -1 // the lab that passed last, for "solution"
	rerun, clear := true, true
	for {
		if rerun {
			rerun = false
			info, err := lab.ReadInfo(ws, infos[current].Lab)
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
			if o.Done() {
				passed = current
				p.Fprintf(w, "\nLab %s passes. Well done! Type solution and Enter to compare your code with the reference; %s says what production libraries do.\n",
					info.Num(), path.Join(info.Dir(), lab.Localized(ws, info.Lab, "PRODUCTION.md")))
				next := nextUnfinished(ctx, ws, w, infos, current)
				if next < 0 {
					p.Fprintln(w, "Every lab passes: the workshop is done. Type quit and Enter to leave.")
					continue
				}
				if watcher != nil {
					watcher.Remove(ws.Abs(infos[current].Dir()))
					if err := watcher.Add(ws.Abs(infos[next].Dir())); err != nil {
						return fmt.Errorf("watching %s: %w", infos[next].Dir(), err)
					}
				}
				current = next
				p.Fprintf(w, "On to lab %s %s.\n\n", infos[current].Num(), infos[current].Title())
				rerun, clear = true, false // keep the congratulations on screen
				continue
			}
			watchFooter(ws, w, info, manual)
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
			p.Fprintf(w, "file watcher: %v\n", err)
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
			quit, err := watchCommand(ctx, ws, w, cmd, commands, infos, current, passed)
			if err != nil || quit {
				return err
			}
			rerun = cmd == ""
		}
	}
}

// watchRun runs one lab and shows every step, with the first failing
// step's story. On a terminal, and when clear, it clears the screen first.
func watchRun(ctx context.Context, ws *repo.Workspace, w *term.Progress, info lab.Info, clear bool) (lab.Outcome, error) {
	p := ws.P
	if w.Terminal && clear {
		fmt.Fprint(w, "\033[H\033[2J")
	}
	outcomes, err := labrun.Run(ctx, ws, []lab.Info{info}, w, func(io.Writer, lab.Outcome, bool) {})
	if err != nil {
		return lab.Outcome{}, err
	}
	o := outcomes[info.Name]
	p.Fprintf(w, "Lab %s %s (%s)\n\n", info.Num(), info.Title(), time.Now().Format("15:04:05"))
	if o.CompileErrs != nil {
		p.Fprintln(w, "does not compile:")
		for _, line := range repo.FirstLines(o.CompileErrs, 12) {
			p.Fprintf(w, "    %s\n", line)
		}
		return o, nil
	}
	p.Fprintf(w, "%d of %d steps passed\n", o.Passed(), len(o.Steps))
	told := false
	for _, s := range o.Steps {
		p.Fprintf(w, "  %-8s %s\n", p.Text(s.State.String()), info.StepTitle(s.N))
		if s.State == lab.StepFailing && !told {
			told = true
			t := s.Failed[0]
			p.Fprintf(w, "    %s failed:\n", t.Name)
			for _, line := range repo.FirstLines(t.FailureLines(), 12) {
				p.Fprintf(w, "        %s\n", strings.TrimLeft(line, " \t"))
			}
			p.Fprintf(w, "    Read %s\n", info.StepLink(s.N))
		}
	}
	return o, nil
}

// watchFooter says what watch waits for.
func watchFooter(ws *repo.Workspace, w io.Writer, info lab.Info, manual bool) {
	p := ws.P
	fmt.Fprintln(w)
	if manual {
		p.Fprintf(w, "Manual mode: save your changes, then press Enter to re-run. %s\n", p.Text(watchHelp))
	} else {
		p.Fprintf(w, "Watching %s/: save a file to re-run. %s\n", info.Dir(), p.Text(watchHelp))
	}
}

// nextUnfinished returns the index of the first lab after current (then
// from the start) that does not pass, or -1.
func nextUnfinished(ctx context.Context, ws *repo.Workspace, w *term.Progress, infos []lab.Info, current int) int {
	outcomes, err := labrun.Run(ctx, ws, infos, w, func(io.Writer, lab.Outcome, bool) {})
	if err != nil {
		return -1
	}
	for k := 1; k < len(infos); k++ {
		i := (current + k) % len(infos)
		if !outcomes[infos[i].Name].Done() {
			return i
		}
	}
	return -1
}

// watchCommand runs one typed command; it reports whether to quit.
// A confirmation is the next line from commands.
func watchCommand(ctx context.Context, ws *repo.Workspace, w *term.Progress, cmd string, commands <-chan string, infos []lab.Info, current, passed int) (bool, error) {
	p := ws.P
	switch cmd {
	case "":
		return false, nil
	case "q", "quit", "exit":
		return true, nil
	case "h", "hint":
		fmt.Fprintln(w)
		err := showHint(ctx, ws, w, infos[current].Lab, false, true)
		if errors.Is(err, repo.ErrFailed) {
			err = nil // it said why
		}
		return false, err
	case "help", "?":
		p.Fprintln(w, watchHelp)
		return false, nil
	case "l", "list", "c", "check", "all":
		fmt.Fprintln(w)
		outcomes, err := labrun.Run(ctx, ws, infos, w, func(io.Writer, lab.Outcome, bool) {})
		if err != nil {
			return false, err
		}
		for _, info := range infos {
			printLabLine(w, outcomes[info.Name])
		}
		p.Fprintln(w, watchHelp)
		return false, nil
	case "s", "solution":
		l := infos[current].Lab
		if passed >= 0 {
			l = infos[passed].Lab
		} else {
			p.Fprintf(w, "Lab %s does not pass yet: this shows the answer to every step. Show it anyway? [y/N] ", l.Num())
			select {
			case answer := <-commands:
				if answer != "y" && answer != "yes" {
					p.Fprintln(w, "Nothing shown.")
					return false, nil
				}
			case <-ctx.Done():
				return true, nil
			}
		}
		return false, showSolution(ws, w, l)
	default:
		p.Fprintf(w, "Unknown command %q. %s\n", cmd, p.Text(watchHelp))
		return false, nil
	}
}

// printLabLine prints a lab's state on one line.
func printLabLine(w io.Writer, o lab.Outcome) {
	p := o.Info.P
	l := o.Info
	switch {
	case o.CompileErrs != nil:
		p.Fprintf(w, "Lab %s %-16s does not compile\n", l.Num(), l.Title())
	default:
		p.Fprintf(w, "Lab %s %-16s %d of %d steps passed\n", l.Num(), l.Title(), o.Passed(), len(o.Steps))
	}
}
