package contract

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// composeRepo returns a workspace holding compose as compose.yaml and,
// when module is true, the repository's own composefile module and its
// deploy/Dockerfile.
func composeRepo(t *testing.T, compose string, module bool) *repo.Workspace {
	t.Helper()
	root := t.TempDir()
	write := func(rel string, data []byte) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("compose.yaml", []byte(compose))
	if module {
		files, err := filepath.Glob(filepath.Join("../../../..", composeFileDir, "*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("the composefile module's files: %v", err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			write(composeFileDir+"/"+filepath.Base(f), data)
		}
		// The module's tests hold compose.yaml to deploy/Dockerfile too.
		dockerfile, err := os.ReadFile(filepath.Join("../../../..", "deploy", "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		write("deploy/Dockerfile", dockerfile)
	}
	ws, err := repo.Open("../../../..", io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ws.Root = root
	return ws
}

// The repository's compose.yaml passes; one with the gateway published on
// every interface fails clause 12 and names the port; a repository
// without the module is noted, not failed.
func TestComposeFileIsChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the composefile module's tests")
	}
	ctx := context.Background()
	good, err := os.ReadFile("../../../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ws := composeRepo(t, string(good), true)
	what, problems, note := composeFileProblems(ctx, ws)
	if note != "" {
		t.Skipf("compose-go is not in the module cache here: %s", note)
	}
	if !strings.Contains(what, "clause 12") || len(problems) > 0 {
		t.Fatalf("the repository's compose.yaml: %q with problems %q, want clause 12 and none", what, problems)
	}

	bad := strings.Replace(string(good), `"127.0.0.1:${FOODDELIVERY_PORT:-8080}:`, `"0.0.0.0:${FOODDELIVERY_PORT:-8080}:`, 1)
	_, problems, _ = composeFileProblems(ctx, composeRepo(t, bad, true))
	if !strings.Contains(strings.Join(problems, "\n"), "gateway publishes 0.0.0.0") {
		t.Errorf("a compose.yaml publishing the gateway on 0.0.0.0 gives the problems %q, want one naming it", problems)
	}

	_, problems, note = composeFileProblems(ctx, composeRepo(t, string(good), false))
	if len(problems) > 0 || !strings.Contains(note, composeFileDir+"/go.mod is missing") {
		t.Errorf("without the module: problems %q, note %q; want a note that names the missing go.mod", problems, note)
	}
}
