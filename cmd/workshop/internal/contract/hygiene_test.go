package contract

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// TestCRLFCheckoutIsGofmtClean clones this repository as Git for Windows
// does by default (core.autocrlf=true) and runs clause 11's gofmt check on
// the clone: .gitattributes must keep every Go file LF.
func TestCRLFCheckoutIsGofmtClean(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "--verify", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout with a commit")
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", "-c", "core.autocrlf=true", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", clone, "config", "core.autocrlf").Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Fatalf("the clone's core.autocrlf is %q, want true", out)
	}
	ws, err := repo.Open(clone, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	files, problems := gofmtProblems(context.Background(), ws)
	if files == 0 {
		t.Fatal("the gofmt check found no Go files in the clone")
	}
	for _, p := range problems {
		t.Errorf("in a core.autocrlf=true clone: %s", p)
	}
}

// TestGofmtProblemSaysCRLF: a file with CRLF line endings gets advice about
// line endings, not only "run gofmt".
func TestGofmtProblemSaysCRLF(t *testing.T) {
	dir := t.TempDir()
	crlf := filepath.Join(dir, "a.go")
	os.WriteFile(crlf, []byte("package a\r\n"), 0o644)
	if got := gofmtProblem(crlf, "a.go"); !strings.Contains(got, "CRLF line endings") || !strings.Contains(got, "gofmt -w a.go") {
		t.Errorf("CRLF file: got %q", got)
	}
	lf := filepath.Join(dir, "b.go")
	os.WriteFile(lf, []byte("package  b\n"), 0o644)
	if got := gofmtProblem(lf, "b.go"); strings.Contains(got, "CRLF") || !strings.Contains(got, "is not gofmt'ed") {
		t.Errorf("LF file: got %q", got)
	}
}
