// Package supervisor runs the food-delivery services as child processes
// (cmd/fooddelivery -processes) and keeps them running: it starts each
// child, waits until it accepts connections on its address, prints its
// pid, relays its output line by line, restarts it after a stated delay
// when it exits, gives up on a child that crashes at start-up again and
// again, and stops every child when it is stopped.
//
// No child outlives its parent. Each child's standard input is a pipe
// that only the supervisor holds open, so when the supervisor's process
// ends in any way (Ctrl-C, SIGTERM, kill -9, a crash) the child reads end
// of file; WatchParent, called in the child, turns that into a shutdown.
// This works the same on Linux, macOS and Windows.
package supervisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Child is one process to supervise.
type Child struct {
	// Name labels the child's output and messages ("payment", "menu-2").
	Name string
	// Args are the arguments the executable is run with.
	Args []string
	// Addr is the TCP host:port the child listens on once it is up; the
	// supervisor dials it to know that a start succeeded. A restart
	// listens on the same address, so the other children's clients find it
	// again.
	Addr string
}

// Config says what to run and how to treat exits. Zero durations and
// counts take the defaults named in each field.
type Config struct {
	// Path is the executable every child runs (os.Executable for the
	// program itself).
	Path     string
	Children []Child
	// Env is added to each child's environment (KEY=value).
	Env []string
	// RestartDelay is how long a child that exited stays down before it
	// is started again. Zero means DefaultRestartDelay.
	RestartDelay time.Duration
	// StartTimeout is how long a child may take from its start to
	// accepting a connection on Addr. Zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// MaxStartupCrashes is how many starts in a row may end before the
	// child is up; the next such start is not retried. Zero means
	// DefaultMaxStartupCrashes. A child that exits with status 2 (bad
	// arguments, which a restart would only repeat) is given up on at
	// once.
	MaxStartupCrashes int
	// Out receives the supervisor's messages and every line the children
	// write, each prefixed with the child's name ("payment | ..."). nil
	// means io.Discard.
	Out io.Writer
	// Events, when set, is called with every start, exit, restart and
	// give-up, from the supervisor's goroutines (one per child); it must
	// not block for long.
	Events func(Event)
}

// Defaults of Config. DefaultRestartDelay is systemd's default RestartSec
// (100 ms): short enough that a caller's retries, spaced over a few
// hundred milliseconds, can meet the restarted process, which is what a
// crash in the middle of a charge must be shown against.
const (
	DefaultRestartDelay      = 100 * time.Millisecond
	DefaultStartTimeout      = 20 * time.Second
	DefaultMaxStartupCrashes = 3
)

// stopGrace is how long Stop waits for a child to exit after its stdin
// closed before it kills the child.
const stopGrace = 5 * time.Second

// EventKind says what happened to a child.
type EventKind string

// The kinds of Event.
const (
	Started  EventKind = "started"  // the process started (PID set)
	Up       EventKind = "up"       // it accepts connections on its address
	Exited   EventKind = "exited"   // it ended while the supervisor ran (Status set)
	GaveUp   EventKind = "gave-up"  // it will not be started again (Reason set)
	Stopping EventKind = "stopping" // Stop asked it to end
	Killed   EventKind = "killed"   // Kill sent it SIGKILL (or its Windows equivalent)
)

// Event is one thing that happened to a child.
type Event struct {
	Time   time.Time
	Child  string
	Kind   EventKind
	PID    int
	Status string // how it exited: "exit status 1", "signal: killed"
	Reason string // why it was given up on
}

// Supervisor runs the children of one Config. Create one with Start.
type Supervisor struct {
	cfg      Config
	out      *lockedWriter
	stopping chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu       sync.Mutex
	children map[string]*child
}

type child struct {
	spec  Child
	pid   int
	cmd   *exec.Cmd
	stdin io.Closer // the write end of the child's stdin pipe
	last  *tail     // its last lines of output
	gone  bool      // given up on
	// startedAt is when the running process started (read and written
	// by keep's goroutine only).
	startedAt time.Time
}

// Start starts every child and waits until each is up. If one cannot
// start, or ends before it is up more times than Config allows, or ctx
// is done first, Start stops the others and returns an error that names
// the child and quotes its last lines of output.
func Start(ctx context.Context, cfg Config) (*Supervisor, error) {
	if cfg.Path == "" {
		return nil, errors.New("supervisor: no executable (Config.Path)")
	}
	if cfg.RestartDelay == 0 {
		cfg.RestartDelay = DefaultRestartDelay
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.MaxStartupCrashes == 0 {
		cfg.MaxStartupCrashes = DefaultMaxStartupCrashes
	}
	if cfg.RestartDelay < 0 || cfg.StartTimeout < 0 || cfg.MaxStartupCrashes < 0 {
		return nil, fmt.Errorf("supervisor: negative setting (restart delay %v, start timeout %v, start-up crashes %d)",
			cfg.RestartDelay, cfg.StartTimeout, cfg.MaxStartupCrashes)
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	s := &Supervisor{cfg: cfg, out: &lockedWriter{w: out}, stopping: make(chan struct{}), children: map[string]*child{}}
	for _, c := range cfg.Children {
		if c.Name == "" || c.Addr == "" {
			return nil, fmt.Errorf("supervisor: child %q needs a name and an address", c.Name)
		}
		if _, dup := s.children[c.Name]; dup {
			return nil, fmt.Errorf("supervisor: two children named %q", c.Name)
		}
		s.children[c.Name] = &child{spec: c, last: newTail(20)}
	}
	first := make(chan error, len(cfg.Children))
	for _, c := range cfg.Children {
		s.wg.Add(1)
		go s.keep(s.children[c.Name], first)
	}
	var errs []error
	for range cfg.Children {
		select {
		case err := <-first:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("supervisor: stopped while the children started: %w", ctx.Err()))
		}
		if len(errs) > 0 {
			break
		}
	}
	if len(errs) > 0 {
		s.Stop()
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// PIDs returns each running child's process id, by name; a child that is
// down (between an exit and its restart, or given up on) is absent.
func (s *Supervisor) PIDs() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	pids := map[string]int{}
	for name, c := range s.children {
		if c.cmd != nil {
			pids[name] = c.pid
		}
	}
	return pids
}

// Kill ends the child name at once, as SIGKILL does (os.Process.Kill):
// no shutdown, no flush; the supervisor then restarts it as after any
// exit. It returns an error for a name it does not run or a child that
// is down.
func (s *Supervisor) Kill(name string) error {
	s.mu.Lock()
	c, ok := s.children[name]
	var cmd *exec.Cmd
	if ok {
		cmd = c.cmd
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("supervisor: no child %q", name)
	}
	if cmd == nil {
		return fmt.Errorf("supervisor: %s is down", name)
	}
	s.event(Event{Child: name, Kind: Killed, PID: cmd.Process.Pid})
	return cmd.Process.Kill()
}

// Stop ends every child: it closes each child's standard input (WatchParent
// then shuts the child down), waits up to 5 s, and kills what is left.
// It returns once every child has exited. It is idempotent.
func (s *Supervisor) Stop() {
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.mu.Lock()
		for name, c := range s.children {
			if c.cmd != nil {
				s.eventLocked(Event{Child: name, Kind: Stopping, PID: c.pid})
				c.stdin.Close()
			}
		}
		s.mu.Unlock()
	})
	s.wg.Wait()
}

// keep runs c until Stop, restarting it after each exit. It sends the
// result of the first start (nil once c is up) on first.
func (s *Supervisor) keep(c *child, first chan<- error) {
	defer s.wg.Done()
	crashes := 0
	for started := false; ; {
		cmd, stdin, exited, err := s.start(c)
		if err != nil {
			s.giveUp(c, fmt.Sprintf("it could not be started: %v", err))
			if !started {
				first <- fmt.Errorf("supervisor: %s: %w", c.spec.Name, err)
			}
			return
		}
		up := s.waitUp(c, exited)
		if !up && len(exited) == 0 {
			// Still running, but not listening in time (or stopping):
			// end it, and the exit below says why.
			cmd.Process.Kill()
		}
		if up && !started {
			started = true
			first <- nil
		}
		var status error
		select {
		case status = <-exited:
		case <-s.stopping:
			stdin.Close()
			select {
			case status = <-exited:
			case <-time.After(stopGrace):
				cmd.Process.Kill()
				<-exited
			}
			s.clear(c)
			return
		}
		s.clear(c)
		select {
		case <-s.stopping:
			if !started {
				first <- fmt.Errorf("supervisor: stopped before %s was up", c.spec.Name)
			}
			return
		default:
		}
		st := statusText(status, cmd)
		s.event(Event{Child: c.spec.Name, Kind: Exited, PID: cmd.Process.Pid, Status: st})
		// A child killed (a crash fault, /admin/crash, kill -9) was not
		// failing to start, though it may have died within upGrace of
		// answering: only a child that ends by itself before it is up
		// (its port held by another program, say) counts.
		if up || killed(cmd.ProcessState) {
			crashes = 0
		} else {
			crashes++
		}
		reason := ""
		switch {
		case cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 2:
			reason = "it exited with status 2 (bad arguments; a restart would fail the same way)"
		case crashes > s.cfg.MaxStartupCrashes:
			reason = fmt.Sprintf("it ended before it was up %d times in a row (limit %d)", crashes, s.cfg.MaxStartupCrashes)
		case !up && s.timedOut(c):
			reason = fmt.Sprintf("it did not accept connections on %s within %v", c.spec.Addr, s.cfg.StartTimeout)
		}
		if reason != "" {
			s.giveUp(c, reason)
			if !started {
				first <- fmt.Errorf("supervisor: %s gave up: %s; its last output:\n%s", c.spec.Name, reason, c.last.String())
			}
			return
		}
		fmt.Fprintf(s.out, "%s exited (%s); restarting in %v\n", c.spec.Name, st, s.cfg.RestartDelay)
		select {
		case <-time.After(s.cfg.RestartDelay):
		case <-s.stopping:
			if !started {
				first <- fmt.Errorf("supervisor: stopped before %s was up", c.spec.Name)
			}
			return
		}
	}
}

// start starts c's process; exited receives its Wait result.
func (s *Supervisor) start(c *child) (*exec.Cmd, io.Closer, chan error, error) {
	select {
	case <-s.stopping:
		return nil, nil, nil, errors.New("the supervisor is stopping")
	default:
	}
	cmd := exec.Command(s.cfg.Path, c.spec.Args...)
	cmd.Env = append(os.Environ(), s.cfg.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return nil, nil, nil, err
	}
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.last.add(sc.Text())
			fmt.Fprintf(s.out, "%s | %s\n", c.spec.Name, sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		<-relayed
		exited <- err
	}()
	s.mu.Lock()
	c.cmd, c.pid, c.stdin = cmd, cmd.Process.Pid, stdin
	s.mu.Unlock()
	c.startedAt = time.Now()
	s.event(Event{Child: c.spec.Name, Kind: Started, PID: cmd.Process.Pid})
	return cmd, stdin, exited, nil
}

// killed reports whether a child's process was killed rather than ending
// by itself: by a signal, or with status 137, which a process that cannot
// kill itself (Windows) exits with to say so (cmd/fooddelivery's crash).
func killed(ps *os.ProcessState) bool {
	return ps != nil && (!ps.Exited() || ps.ExitCode() == 137)
}

// upGrace is how long a child must still run after its address first
// accepts a connection to count as up: a child that could not bind,
// because another program holds its port, exits at once, and that
// program's accepting must not count as the child being up.
const upGrace = 500 * time.Millisecond

// waitUp dials c's address until it answers and the process still runs
// upGrace later (true), or the process exits or StartTimeout passes
// (false). An exit is left in exited.
func (s *Supervisor) waitUp(c *child, exited chan error) bool {
	deadline := time.Now().Add(s.cfg.StartTimeout)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", c.spec.Addr, time.Second)
		if err == nil {
			conn.Close()
			select {
			case err := <-exited:
				exited <- err // it answered, but as someone else: its own exit says why
				return false
			case <-s.stopping:
				return false
			case <-time.After(upGrace):
			}
			s.event(Event{Child: c.spec.Name, Kind: Up, PID: c.pid})
			return true
		}
		select {
		case err := <-exited:
			exited <- err
			return false
		case <-s.stopping:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

func (s *Supervisor) timedOut(c *child) bool {
	return time.Since(c.startedAt) >= s.cfg.StartTimeout
}

func (s *Supervisor) clear(c *child) {
	s.mu.Lock()
	c.cmd = nil
	s.mu.Unlock()
}

func (s *Supervisor) giveUp(c *child, reason string) {
	s.mu.Lock()
	c.gone = true
	s.mu.Unlock()
	fmt.Fprintf(s.out, "%s: giving up, not restarting it: %s\n", c.spec.Name, reason)
	s.event(Event{Child: c.spec.Name, Kind: GaveUp, Reason: reason})
}

func (s *Supervisor) event(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eventLocked(e)
}

func (s *Supervisor) eventLocked(e Event) {
	if s.cfg.Events == nil {
		return
	}
	e.Time = time.Now()
	s.cfg.Events(e)
}

// statusText says how a process ended: "exit status 1", "signal: killed".
func statusText(err error, cmd *exec.Cmd) string {
	if cmd.ProcessState != nil {
		return cmd.ProcessState.String()
	}
	if err != nil {
		return err.Error()
	}
	return "exited"
}

// WatchParent is for the child: it calls stop once its standard input
// reaches end of file or fails, which happens when the supervisor closes
// the pipe (Stop) or its process ends in any way. The child should then
// shut down.
func WatchParent(stop func()) {
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
}

// tail keeps the last n lines written to it.
type tail struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "  (none)"
	}
	return "  " + strings.Join(t.lines, "\n  ")
}

// lockedWriter serialises writes from the children's relays.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
