package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// ManifestPath is the starter manifest's slash path from the root.
const ManifestPath = "labs/starters.txt"

const manifestHeader = `# Pristine lab starter files: "<git blob id> <path>", one per editable lab file.
# Written by "go run ./cmd/workshop pin" (git hash-object); do not edit by hand.
# "go run ./cmd/workshop verify" checks the starters from these blobs, so the
# learner's edits never affect it.
`

var blobID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`) // SHA-1 or SHA-256

// ParseManifest reads a starter manifest: blob id by slash path.
func ParseManifest(text string) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, p, ok := strings.Cut(line, " ")
		p = strings.TrimSpace(p)
		switch {
		case !ok || p == "":
			return nil, fmt.Errorf("%s:%d: want \"<git blob id> <path>\", got %q", ManifestPath, n, line)
		case !blobID.MatchString(id):
			return nil, fmt.Errorf("%s:%d: %q is not a git blob id", ManifestPath, n, id)
		case !strings.HasPrefix(p, "labs/") || path.Clean(p) != p || strings.Contains(p, `\`):
			return nil, fmt.Errorf("%s:%d: %q is not a clean slash path under labs/", ManifestPath, n, p)
		}
		if _, dup := m[p]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", ManifestPath, n, p)
		}
		m[p] = id
	}
	return m, sc.Err()
}

// formatManifest writes a manifest, sorted by path.
func formatManifest(ids map[string]string) string {
	paths := make([]string, 0, len(ids))
	for p := range ids {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	b.WriteString(manifestHeader)
	for _, p := range paths {
		fmt.Fprintf(&b, "%s %s\n", ids[p], p)
	}
	return b.String()
}

// ReadManifest reads labs/starters.txt; a missing file is an empty manifest
// and ok == false.
func ReadManifest(ws *repo.Workspace) (m map[string]string, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(ws.Root, filepath.FromSlash(ManifestPath)))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	m, err = ParseManifest(string(data))
	return m, err == nil, err
}

// Pin rewrites labs/starters.txt from the editable files of every present lab.
func Pin(ctx context.Context, ws *repo.Workspace) error {
	if !ws.InGitCheckout(ctx) {
		return errors.New("pin needs git and a git checkout of the workshop (it records git blob ids)")
	}
	labs, err := List(ws)
	if err != nil {
		return err
	}
	var files []string
	for _, l := range labs {
		if !l.Present {
			continue
		}
		editable, _, err := Files(ws, l.Dir())
		if err != nil {
			return err
		}
		files = append(files, editable...)
	}
	if len(files) == 0 {
		return errors.New("no lab has editable files yet: nothing to pin")
	}
	ids, err := ws.HashObjects(ctx, files)
	if err != nil {
		return err
	}
	out := filepath.Join(ws.Root, filepath.FromSlash(ManifestPath))
	if err := os.WriteFile(out, []byte(formatManifest(ids)), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(ws.Stdout, "pinned %d starter files in %s\n", len(ids), ManifestPath)
	fmt.Fprintf(ws.Stdout, "commit the starters with it: verify reads their pristine content from git\n")
	return nil
}

// Pristine describes how to build a lab's pristine starter.
type Pristine struct {
	Skip    string            // why the starter checks are skipped (no git); "" otherwise
	Problem []string          // why the starter cannot be built (manifest out of date); nil when fine
	Files   []string          // the starter's editable files (slash paths)
	Replace map[string]string // overlay: absolute working path -> absolute file with pristine content
	Content map[string][]byte // pristine content by slash path
}

// PristineStarter works out a lab's pristine starter from the manifest,
// writing blobs that differ from the working copy into tmp.
func PristineStarter(ctx context.Context, ws *repo.Workspace, l Lab, editable []string, manifest map[string]string, tmp string) Pristine {
	p := Pristine{Replace: map[string]string{}, Content: map[string][]byte{}}
	if !ws.InGitCheckout(ctx) {
		p.Skip = "git is not available or this is not a git checkout: skipping the pristine-starter checks"
		return p
	}
	var missing []string
	for _, f := range editable {
		if _, ok := manifest[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		for _, f := range missing {
			p.Problem = append(p.Problem, f+" is not in "+ManifestPath)
		}
		p.Problem = append(p.Problem, "run go run ./cmd/workshop pin (and commit the result)")
		return p
	}
	// The starter is what the manifest lists for this lab (a file the
	// learner deleted comes back through the overlay).
	prefix := l.Dir() + "/"
	for f := range manifest {
		if strings.HasPrefix(f, prefix) && !strings.Contains(f[len(prefix):], "/") {
			p.Files = append(p.Files, f)
		}
	}
	sort.Strings(p.Files)
	var present []string
	for _, f := range p.Files {
		if _, err := os.Stat(ws.Abs(f)); err == nil {
			present = append(present, f)
		}
	}
	ids, err := ws.HashObjects(ctx, present)
	if err != nil {
		p.Problem = []string{err.Error()}
		return p
	}
	for _, f := range p.Files {
		if ids[f] == manifest[f] {
			data, err := os.ReadFile(ws.Abs(f))
			if err != nil {
				p.Problem = append(p.Problem, err.Error())
				continue
			}
			p.Content[f] = data
			continue
		}
		res := ws.Git(ctx, "cat-file", "blob", manifest[f])
		if res.Err != nil {
			p.Problem = append(p.Problem, fmt.Sprintf("%s: blob %s is not in git (%s): commit the starter after pinning it",
				f, manifest[f], strings.TrimSpace(string(res.Stderr))))
			continue
		}
		tmpFile := filepath.Join(tmp, strings.ReplaceAll(f, "/", "_"))
		if err := os.WriteFile(tmpFile, res.Stdout, 0o644); err != nil {
			p.Problem = append(p.Problem, err.Error())
			continue
		}
		p.Content[f] = res.Stdout
		p.Replace[ws.Abs(f)] = tmpFile
	}
	return p
}
