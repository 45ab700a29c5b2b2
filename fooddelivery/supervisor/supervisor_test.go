package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary plays the children: with SUPERVISOR_TEST_CHILD set it
// runs as one and never reaches the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("SUPERVISOR_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "serve":
		serveChild()
	case "crash":
		fmt.Println("cannot open the data file")
		os.Exit(1)
	case "usage":
		fmt.Println("-service nosuch: no such service")
		os.Exit(2)
	case "mute":
		// Runs, never listens.
		WatchParent(func() { os.Exit(0) })
		select {}
	case "parent":
		parentChild()
	case "selfkill":
		selfKillChild()
	}
}

// selfKillChild listens on its first argument and kills itself, as a
// crash fault does (cmd/fooddelivery's crashNow), when a second
// connection arrives: the first is the supervisor's, which finds it up.
func selfKillChild() {
	l, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	WatchParent(func() { os.Exit(0) })
	for n := 1; ; n++ {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		c.Close()
		if n == 2 {
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Kill()
			}
			os.Exit(137)
		}
	}
}

// serveChild listens on its first argument, answers each connection with
// its pid, and exits when its parent goes.
func serveChild() {
	l, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	fmt.Println("listening on", l.Addr())
	WatchParent(func() {
		fmt.Println("parent gone, stopping")
		os.Exit(0)
	})
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		fmt.Fprintf(c, "%d\n", os.Getpid())
		c.Close()
	}
}

// parentChild supervises one serving child on the address in its first
// argument, prints the child's pid, and waits to be killed.
func parentChild() {
	exe, _ := os.Executable()
	s, err := Start(context.Background(), Config{Path: exe, Env: []string{"SUPERVISOR_TEST_CHILD=serve"},
		Children: []Child{{Name: "payment", Args: []string{os.Args[1]}, Addr: os.Args[1]}}})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	fmt.Println("child", s.PIDs()["payment"])
	select {}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// pidAt asks the child at addr for its pid; 0 when nothing answers.
func pidAt(addr string) int {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var pid int
	fmt.Fscan(c, &pid)
	return pid
}

// eventually polls cond every 50 ms for up to 30 s of real time: these
// tests run real processes, and a slow machine must not fail them.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) count(child string, kind EventKind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Child == child && ev.Kind == kind {
			n++
		}
	}
	return n
}

func self(t *testing.T) string {
	exe, err := os.Executable()
	require.NoError(t, err)
	return exe
}

func TestChildrenRunRestartAndStop(t *testing.T) {
	a, b := freeAddr(t), freeAddr(t)
	var out bytes.Buffer
	var evs events
	s, err := Start(t.Context(), Config{
		Path: self(t), Env: []string{"SUPERVISOR_TEST_CHILD=serve"},
		Children:     []Child{{Name: "payment", Args: []string{a}, Addr: a}, {Name: "order", Args: []string{b}, Addr: b}},
		RestartDelay: 100 * time.Millisecond,
		Out:          &lockedBuffer{b: &out},
		Events:       evs.add,
	})
	require.NoError(t, err)
	defer s.Stop()

	pids := s.PIDs()
	require.Len(t, pids, 2, "both children run: %v", pids)
	assert.Equal(t, pids["payment"], pidAt(a), "the process at payment's address is the one the supervisor started")
	assert.Equal(t, pids["order"], pidAt(b))
	assert.NotEqual(t, os.Getpid(), pids["payment"], "a child is its own process")

	old := pids["payment"]
	require.NoError(t, s.Kill("payment"))
	eventually(t, "payment restarted with a new pid on its address", func() bool {
		p := pidAt(a)
		return p != 0 && p != old
	})
	assert.Equal(t, 2, evs.count("payment", Started), "payment started twice: once, and once after the kill")
	assert.Equal(t, 1, evs.count("order", Started), "order was never restarted")

	s.Stop()
	assert.Zero(t, pidAt(a), "after Stop nothing answers on payment's address")
	assert.Zero(t, pidAt(b), "after Stop nothing answers on order's address")
	assert.Empty(t, s.PIDs(), "after Stop no child runs")
	text := out.String()
	assert.Contains(t, text, "payment | listening on "+a, "a child's output is relayed with its name")
	assert.Regexp(t, `payment exited \([^)]+\); restarting in 100ms`, text, "the supervisor says how it ended and when it restarts")
	assert.Contains(t, text, "order | parent gone, stopping", "Stop ends a child through its stdin")
}

func TestChildCrashingAtStartupIsGivenUp(t *testing.T) {
	a := freeAddr(t)
	start := time.Now()
	_, err := Start(t.Context(), Config{
		Path: self(t), Env: []string{"SUPERVISOR_TEST_CHILD=crash"},
		Children:     []Child{{Name: "payment", Args: []string{a}, Addr: a}},
		RestartDelay: 10 * time.Millisecond, MaxStartupCrashes: 2,
	})
	require.Error(t, err, "a child that never comes up fails the start")
	assert.Contains(t, err.Error(), "payment gave up: it ended before it was up 3 times in a row (limit 2)")
	assert.Contains(t, err.Error(), "cannot open the data file", "the error quotes the child's last output")
	t.Logf("gave up after %v", time.Since(start))
}

// A child whose port another program holds fails to bind and exits; the
// other program's accepting does not make it up, so it is given up on
// after the stated count instead of restarted for ever.
func TestChildWhosePortIsTakenIsGivenUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	a := l.Addr().String()
	_, err = Start(t.Context(), Config{
		Path: self(t), Env: []string{"SUPERVISOR_TEST_CHILD=serve"},
		Children:     []Child{{Name: "gateway", Args: []string{a}, Addr: a}},
		RestartDelay: 10 * time.Millisecond, MaxStartupCrashes: 2,
	})
	require.Error(t, err, "a child that cannot bind its port never comes up, though the port answers")
	assert.Contains(t, err.Error(), "gateway gave up: it ended before it was up 3 times in a row (limit 2)")
	assert.Contains(t, err.Error(), "address already in use", "the error quotes the child's own reason")
}

// A child killed again and again soon after it answered (a crash fault
// on the first charge after each restart) is restarted every time: it was
// up, and killed, which is no failure to start however fast it comes.
func TestChildKilledSoonAfterEachStartIsRestarted(t *testing.T) {
	a := freeAddr(t)
	var evs events
	s, err := Start(t.Context(), Config{
		Path: self(t), Env: []string{"SUPERVISOR_TEST_CHILD=selfkill"},
		Children:     []Child{{Name: "payment", Args: []string{a}, Addr: a}},
		RestartDelay: 10 * time.Millisecond, MaxStartupCrashes: 1, Events: evs.add,
	})
	require.NoError(t, err)
	defer s.Stop()
	for kill := 1; kill <= 4; kill++ {
		started := evs.count("payment", Started)
		// Dial until this start's process dies: its supervisor's probe
		// and ours, within upGrace of its answering.
		for deadline := time.Now().Add(30 * time.Second); evs.count("payment", Started) == started; time.Sleep(5 * time.Millisecond) {
			if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
				c.Close()
			}
			if evs.count("payment", GaveUp) > 0 || time.Now().After(deadline) {
				t.Fatalf("kill %d: payment was not restarted (%d starts, given up %d times)", kill, evs.count("payment", Started), evs.count("payment", GaveUp))
			}
		}
	}
	assert.Zero(t, evs.count("payment", GaveUp), "a child killed %d times soon after it answered is no child that cannot start", 4)
}

func TestChildWithBadArgumentsIsGivenUpAtOnce(t *testing.T) {
	a := freeAddr(t)
	var evs events
	_, err := Start(t.Context(), Config{
		Path: self(t), Env: []string{"SUPERVISOR_TEST_CHILD=usage"},
		Children: []Child{{Name: "payment", Args: []string{a}, Addr: a}}, Events: evs.add,
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited with status 2")
	assert.Contains(t, err.Error(), "no such service")
	assert.Equal(t, 1, evs.count("payment", Started), "a usage error is not retried")
}

func TestChildThatNeverListensIsGivenUp(t *testing.T) {
	a := freeAddr(t)
	_, err := Start(t.Context(), Config{
		Path: self(t), Env: []string{"SUPERVISOR_TEST_CHILD=mute"},
		Children:     []Child{{Name: "payment", Args: []string{a}, Addr: a}},
		StartTimeout: 300 * time.Millisecond,
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not accept connections on "+a+" within 300ms")
}

func TestNoChildOutlivesAKilledParent(t *testing.T) {
	a := freeAddr(t)
	parent := exec.Command(self(t), a)
	parent.Env = append(os.Environ(), "SUPERVISOR_TEST_CHILD=parent")
	var out lockedBuffer
	out.b = new(bytes.Buffer)
	parent.Stdout, parent.Stderr = &out, &out
	require.NoError(t, parent.Start())
	defer parent.Process.Kill()
	var child int
	eventually(t, "the parent prints its child's pid", func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			if p, ok := strings.CutPrefix(line, "child "); ok {
				child, _ = strconv.Atoi(p)
			}
		}
		return child != 0
	})
	require.Equal(t, child, pidAt(a), "the child serves")
	require.NoError(t, parent.Process.Kill(), "kill -9 of the parent")
	parent.Wait()
	eventually(t, fmt.Sprintf("the child (pid %d) exits once its parent is killed", child), func() bool { return pidAt(a) == 0 })
}

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
