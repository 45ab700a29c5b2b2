package contract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// composeFileDir is the nested module whose tests load compose.yaml with
// compose-go and check its promises, so that the file is checked where
// no Docker engine runs; its own go.mod keeps compose-go out of a
// learner's downloads.
const composeFileDir = "internal/composefile"

// composeFileProblems runs composeFileDir's tests offline (clause 12). It
// returns the check's name and its problems, or a note instead when the
// repository has no compose.yaml, composeFileDir is missing, or its
// modules are not all in the module cache (verify never downloads them).
func composeFileProblems(ctx context.Context, ws *repo.Workspace) (what string, problems []string, note string) {
	if _, err := os.Stat(filepath.Join(ws.Root, "compose.yaml")); err != nil {
		return "", nil, ""
	}
	what = fmt.Sprintf("clause %d: compose.yaml loads with compose-go and keeps its promises (%s)", clauseProjectTests, composeFileDir)
	if _, err := os.Stat(filepath.Join(ws.Root, composeFileDir, "go.mod")); err != nil {
		return what, nil, fmt.Sprintf("compose.yaml not checked: %s/go.mod is missing", composeFileDir)
	}
	if why := uncachedModule(ctx, ws, composeFileDir); why != "" {
		return what, nil, fmt.Sprintf("compose.yaml not checked: %s; go -C %s mod download fetches them", why, composeFileDir)
	}
	res := ws.RunCmdEnv(ctx, 5*time.Minute, offline, ws.GoBin, "-C", composeFileDir, "test", "-count=1", "./...")
	if res.Err != nil {
		problems = res.Combined()
		if len(problems) == 0 {
			problems = []string{res.Err.Error()}
		}
	}
	return what, problems, ""
}
