package contract

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// TestDirectProblems: a module imported but marked // indirect, and one
// required directly that nothing imports, are both named, offline.
func TestDirectProblems(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	sum, err := os.ReadFile("../../../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(sum), "\n") {
		if strings.HasPrefix(line, "github.com/fsnotify/fsnotify ") || strings.HasPrefix(line, "github.com/go-chi/chi/v5 ") || strings.HasPrefix(line, "golang.org/x/sys ") {
			keep = append(keep, line)
		}
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "labs"), 0o755)
	files := map[string]string{
		"go.mod": "module example.com/tidy\n\ngo 1.26.0\n\nrequire github.com/go-chi/chi/v5 v5.5.0\n\n" +
			"require (\n\tgithub.com/fsnotify/fsnotify v1.10.1 // indirect\n\tgolang.org/x/sys v0.48.0 // indirect\n)\n",
		"go.sum": strings.Join(keep, "\n") + "\n",
		"a.go":   "package a\n\nimport _ \"github.com/fsnotify/fsnotify\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := repo.Open(dir, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got, err := directProblems(context.Background(), ws)
	if err != nil {
		t.Skipf("the offline check cannot run here (modules not in the cache?): %v", err)
	}
	want := []string{
		"go.mod marks github.com/fsnotify/fsnotify // indirect, but github.com/fsnotify/fsnotify is imported: move it to the first require block (go mod tidy does)",
		"go.mod requires github.com/go-chi/chi/v5 directly, but no package imports it: mark it // indirect or drop it (go mod tidy does)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("directProblems:\ngot  %q\nwant %q", got, want)
	}
	if problems, _ := tidyProblems(context.Background(), ws); len(problems) == 0 {
		t.Error("tidyProblems found nothing wrong with a go.mod that marks an imported module indirect")
	}
}

// TestThisGoModIsTidy runs the offline check on this repository, whose
// go.mod lists every module it imports directly in its first block.
func TestThisGoModIsTidy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	ws, err := repo.Open("../../../..", io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := directProblems(context.Background(), ws)
	if err != nil {
		t.Skipf("the offline check cannot run here: %v", err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
