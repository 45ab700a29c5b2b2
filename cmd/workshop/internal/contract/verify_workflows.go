package contract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// toolsDir is the nested module of the instructor's tools that verify runs
// (actionlint); its own go.mod keeps them out of a learner's downloads.
const toolsDir = "internal/tools"

// toolsFetch is the command that downloads toolsDir's modules.
const toolsFetch = "go -C " + toolsDir + " mod download"

// workflowProblems lints every workflow under .github/workflows with
// actionlint from toolsDir (clause 11), offline. It returns the check's
// name and its problems, or a note instead when toolsDir or its modules
// are not all in the module cache (verify never downloads them); what is
// empty when the repository has no workflow.
func workflowProblems(ctx context.Context, ws *repo.Workspace) (what string, problems []string, note string) {
	files, _ := filepath.Glob(filepath.Join(ws.Root, ".github", "workflows", "*.y*ml"))
	sort.Strings(files)
	if len(files) == 0 {
		return "", nil, ""
	}
	n := fmt.Sprintf("%d files", len(files))
	if len(files) == 1 {
		n = "1 file"
	}
	what = fmt.Sprintf("clause %d: the GitHub workflows pass actionlint (%s under .github/workflows)", clauseVetFmt, n)
	if _, err := os.Stat(filepath.Join(ws.Root, toolsDir, "go.mod")); err != nil {
		return what, nil, fmt.Sprintf("workflows not linted: %s/go.mod is missing", toolsDir)
	}
	if why := uncachedModule(ctx, ws, toolsDir); why != "" {
		return what, nil, fmt.Sprintf("workflows not linted: %s; %s fetches them", why, toolsFetch)
	}
	args := []string{"-C", toolsDir, "tool", "actionlint", "-no-color", "-shellcheck=", "-pyflakes="}
	res := ws.RunCmdEnv(ctx, 5*time.Minute, offline, ws.GoBin, append(args, files...)...)
	if res.Err != nil {
		problems = res.Combined()
		if len(problems) == 0 {
			problems = []string{res.Err.Error()}
		}
	}
	return what, problems, ""
}
