package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

var update = flag.Bool("update", false, "rewrite the screenshots under docs/")

// chromium is the browser the tests drive; "" when none is installed.
var chromium string

// binary is the food-delivery command, built once for every test.
var binary string

// root is the repository's root, two levels up.
var root = filepath.Join("..", "..")

func TestMain(m *testing.M) {
	flag.Parse()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		fmt.Println("browser tests skipped: no Chromium on PATH; on Debian, apt-get install chromium enables them")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "browsertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "fooddelivery")
	build := exec.Command("go", "build", "-o", binary, "./cmd/fooddelivery")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the system: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// system is one run of the food-delivery command.
type system struct {
	base string // http://127.0.0.1:PORT
}

// startSystem runs the command with args on a free loopback port and
// returns once its banner gives the address; the process is stopped when
// the test ends.
func startSystem(t *testing.T, args ...string) *system {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer // the system's log (breaker changes and errors), shown when the test fails
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the system's log:\n%s", logs.String())
		}
	})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "GraphQL endpoint: "); ok {
				found <- strings.TrimSuffix(strings.TrimSpace(rest), "/graphql")
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case base := <-found:
		return &system{base: base}
	case <-time.After(60 * time.Second):
		t.Fatal("the system printed no GraphQL endpoint within 60s")
	}
	return nil
}

// lockedBuffer is a bytes.Buffer safe for the process's writes and the
// test's read.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// browser opens a headless Chromium tab for the test, and fails the test
// if the page requests anything outside 127.0.0.1.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1600, 1000),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	var mu sync.Mutex
	var foreign []string
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			u, err := url.Parse(e.Request.URL)
			if err != nil || (u.Scheme != "data" && u.Scheme != "blob" && u.Scheme != "about" && u.Hostname() != "127.0.0.1") {
				mu.Lock()
				foreign = append(foreign, e.Request.URL)
				mu.Unlock()
			}
		}
	})
	if err == nil {
		_, err = chromedp.Call(ctx, network.Enable, network.EnableParams{})
	}
	if err != nil {
		t.Fatalf("starting Chromium (%s): %v", chromium, err)
	}
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		mu.Lock()
		defer mu.Unlock()
		if len(foreign) > 0 {
			t.Errorf("the page requested %d URL(s) outside 127.0.0.1, which a room without Wi-Fi cannot reach: %v", len(foreign), foreign)
		}
	})
	return ctx
}

// waitFor polls the JavaScript expression cond (true when done) every
// 250ms for at most bound; it fails with what, and with the value of show
// (an expression that says what the page shows) when it never holds.
func waitFor(t *testing.T, ctx context.Context, bound time.Duration, what, cond, show string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](show))
			t.Fatalf("%s: not within %v (the page shows %q; last error %v)", what, bound, shown, err)
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			t.Fatal("the browser went away")
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// screenshot writes the page to docs/NAME.png under -update only.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*update {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 writes a PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(root, "docs", name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
