package contract

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// benchWorkspace makes a workspace whose benchDir module holds the given
// go.mod lines after its module line and the benchmark file bench_test.go.
func benchWorkspace(t *testing.T, requires, benchmarks string) *repo.Workspace {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                    "module example.com/ws\n\ngo 1.26.0\n",
		"labs/README.md":            "no labs\n",
		benchDir + "/go.mod":        "module example.com/ws/internal/bench\n\ngo 1.26.0\n" + requires,
		benchDir + "/bench_test.go": "package bench\n\nimport \"testing\"\n\n" + benchmarks,
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := repo.Open(root, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

const (
	goodBenchmark = `func BenchmarkSuccessPath(b *testing.B) {
	calls := 0
	for b.Loop() {
		calls++
	}
	if calls != b.N {
		b.Fatalf("%d calls in %d iterations", calls, b.N)
	}
}
`
	wrongPathBenchmark = `func BenchmarkWrongPath(b *testing.B) {
	for b.Loop() {
	}
	b.Fatalf("the breaker opened after %d successful calls, want closed", b.N)
}
`
)

func runVerifyBench(t *testing.T, ws *repo.Workspace) (string, *report) {
	t.Helper()
	var out bytes.Buffer
	r := &report{w: &out}
	if err := verifyBench(context.Background(), ws, r); err != nil {
		t.Fatal(err)
	}
	return out.String(), r
}

// TestVerifyBench: clause 14 passes when every benchmark runs, fails with
// the message of a benchmark that b.Fatal's, and is skipped with the
// command that fetches the modules when they are not in the module cache.
func TestVerifyBench(t *testing.T) {
	t.Run("passing", func(t *testing.T) {
		out, r := runVerifyBench(t, benchWorkspace(t, "", goodBenchmark))
		if r.passed != 1 || r.failed != 0 || !strings.Contains(out, "ok   clause 14: ") {
			t.Errorf("one benchmark that runs its success path: %d passed, %d failed, want 1 ok of clause 14; output:\n%s", r.passed, r.failed, out)
		}
	})
	t.Run("wrong path", func(t *testing.T) {
		out, r := runVerifyBench(t, benchWorkspace(t, "", goodBenchmark+wrongPathBenchmark))
		if r.failed != 1 || !strings.Contains(out, "FAIL clause 14: ") ||
			!strings.Contains(out, "the breaker opened after 1 successful calls, want closed") {
			t.Errorf("a benchmark that b.Fatal's: %d failed, want 1 FAIL of clause 14 with its message; output:\n%s", r.failed, out)
		}
		if strings.Contains(out, "BenchmarkSuccessPath-") || strings.Contains(out, "goos:") {
			t.Errorf("the failure lists the passing benchmark's result or the header, want only what failed:\n%s", out)
		}
	})
	t.Run("modules missing", func(t *testing.T) {
		out, r := runVerifyBench(t, benchWorkspace(t, "\nrequire example.com/not-in-any-cache v1.0.0\n", goodBenchmark))
		if r.passed+r.failed != 0 || !strings.Contains(out, "note benchmarks skipped") || !strings.Contains(out, benchFetch) {
			t.Errorf("modules not in the cache: %d passed, %d failed, want a note naming %q and no check; output:\n%s", r.passed, r.failed, benchFetch, out)
		}
	})
	t.Run("no bench module", func(t *testing.T) {
		ws := benchWorkspace(t, "", goodBenchmark)
		if err := os.Remove(filepath.Join(ws.Root, benchDir, "go.mod")); err != nil {
			t.Fatal(err)
		}
		if out, r := runVerifyBench(t, ws); out != "" || r.passed+r.failed != 0 {
			t.Errorf("without %s/go.mod: %d passed, %d failed, want nothing; output:\n%s", benchDir, r.passed, r.failed, out)
		}
	})
}
