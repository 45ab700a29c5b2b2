package testkit

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TableCells splits gather's table into rows of cells (columns are separated
// by two spaces or more; no cell here holds two spaces), up to the blank line
// before the legend.
func TableCells(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			break
		}
		var cells []string
		for _, c := range strings.Split(line, "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		rows = append(rows, cells)
	}
	return rows
}

const SampleHints = "# Lab 03 (retries): hints\r\n\r\n" +
	"A preamble, ignored.\r\n\r\n" +
	"## Step 1\n\n" +
	"### \"Retryable(HTTP 404) = true\"\n\n" +
	"List the transient statuses.\n\n" +
	"### \"the first attempt ... timed out\"\n\n" +
	"Use a timer:\n\n```go\n## not a step\n### not a hint\n```\n\n#### A deeper heading is body text\n\nThe end.\n\n" +
	"## Step 3 ##\n\n" +
	"### `go test -race`: \"WARNING: DATA RACE\"\n\nTake the lock.\n"

// UseTempCacheDir points os.UserCacheDir at a new temporary directory and
// returns what it now says. The go command's own cache, which defaults to a
// directory under it, stays where it was.
func UseTempCacheDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("GOCACHE") == "" {
		if d, err := os.UserCacheDir(); err == nil {
			t.Setenv("GOCACHE", filepath.Join(d, "go-build"))
		}
	}
	dir := t.TempDir()
	switch runtime.GOOS {
	case "windows":
		t.Setenv("LocalAppData", dir)
	case "darwin", "ios":
		if os.Getenv("GOPATH") == "" {
			if home, err := os.UserHomeDir(); err == nil {
				t.Setenv("GOPATH", filepath.Join(home, "go"))
			}
		}
		t.Setenv("HOME", dir)
	case "plan9":
		t.Setenv("home", dir)
	default:
		t.Setenv("XDG_CACHE_HOME", dir)
	}
	got, err := os.UserCacheDir()
	if err != nil || !under(dir, got) {
		t.Skipf("cannot point os.UserCacheDir at %s on %s (got %q, %v)", dir, runtime.GOOS, got, err)
	}
	return got
}

const SampleReadme = "# Lab 01: timeouts\n\n" +
	"## The story\n\nPayment hangs.\n\n" +
	"## The pattern\n\n```go\n## Not a heading\n### Step 9: inside a fence\n```\n\n" +
	"## Steps\n\n### Step 1: Give up on a hanging payment\n\ntext\n\n" +
	"### Step 2 - Fail fast on a black-holed host ###\n\n### Step 3. Measure it\n\n### Notes\n\n" +
	"## Hints\n\n### Step 4: not under Steps\n\n" +
	"## Experiment\n\n| a table | is not counted |\n|---|:-:|\n| nor | its rows |\n\n| a pipe without a delimiter row is prose\n\n## In production\n\nSee [PRODUCTION.md](PRODUCTION.md).\n"

// SyncBuffer is a bytes.Buffer safe for a writer and a poller.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p under the lock.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor polls out until it contains want, for up to a minute of real
// time (a busy machine builds slowly; the test never fails for that alone).
func WaitFor(t *testing.T, out *SyncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the output still lacks %q:\n%s", want, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// under reports whether p is dir or below it.
func under(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
