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

// workflowRepo returns a workspace holding workflow as
// .github/workflows/classroom.yml and, when tools is true, the
// repository's own tools module.
func workflowRepo(t *testing.T, workflow string, tools bool) *repo.Workspace {
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
	write(".github/workflows/classroom.yml", []byte(workflow))
	if tools {
		for _, f := range []string{"go.mod", "go.sum"} {
			data, err := os.ReadFile(filepath.Join("../../../../", toolsDir, f))
			if err != nil {
				t.Fatal(err)
			}
			write(toolsDir+"/"+f, data)
		}
	}
	ws, err := repo.Open("../../../..", io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ws.Root = root
	return ws
}

// A workflow actionlint finds wrong fails clause 11, naming the file's
// line and the key; a repository without the tools module is noted, not
// failed.
func TestWorkflowsAreLinted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds actionlint")
	}
	ctx := context.Background()
	const bad = "name: x\n\"on\": push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    timeout-minute: 5\n    steps:\n      - run: echo ${{ steps.nothing.outputs.x }}\n"
	ws := workflowRepo(t, bad, true)
	what, problems, note := workflowProblems(ctx, ws)
	if note != "" {
		t.Skipf("actionlint is not in the module cache here: %s", note)
	}
	text := strings.Join(problems, "\n")
	if !strings.HasPrefix(what, "clause 11: the GitHub workflows pass actionlint (1 file") ||
		!strings.Contains(text, `classroom.yml:6:5: unexpected key "timeout-minute"`) || !strings.Contains(text, `"nothing"`) {
		t.Errorf("a wrong workflow: got %q with problems\n%s\nwant clause 11 failing on line 6's key and the unknown step", what, text)
	}

	good := strings.Replace(strings.Replace(bad, "timeout-minute:", "timeout-minutes:", 1), "${{ steps.nothing.outputs.x }}", "hello", 1)
	if _, problems, _ := workflowProblems(ctx, workflowRepo(t, good, true)); len(problems) > 0 {
		t.Errorf("a right workflow has problems:\n%s", strings.Join(problems, "\n"))
	}

	if _, problems, note := workflowProblems(ctx, workflowRepo(t, good, false)); problems != nil ||
		!strings.Contains(note, "workflows not linted: internal/tools/go.mod is missing") {
		t.Errorf("without the tools module: got problems %q and note %q, want only a note", problems, note)
	}
}
