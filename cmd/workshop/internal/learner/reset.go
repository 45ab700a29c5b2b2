package learner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// backupDir is where reset copies a learner's files, under the repository
// root: the go command ignores directories whose names begin with a dot,
// and .gitignore lists it.
const backupDir = ".workshop/backups"

// Reset is "reset NN [-y]": it puts the pristine starter of lab NN back
// from git's objects (the blob ids labs/starters.txt pins), after copying
// the learner's editable files to a backup directory whose path it prints.
// Editable files the starter does not have are moved to the backup too.
// Test files and READMEs are not touched. Without -y it asks first.
func Reset(ctx context.Context, ws *repo.Workspace, arg string, yes bool) error {
	p := ws.P
	labs, err := lab.List(ws)
	if err != nil {
		return err
	}
	l, ok := lab.Find(labs, arg)
	if !ok || !l.Present {
		return lab.NoLab(arg, labs)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return p.Errorf("reset needs git, which is not installed here: it takes the starter from git's objects")
	}
	if !ws.InGitCheckout(ctx) {
		return p.Errorf("reset needs a git clone of the workshop: it takes the starter from git's objects (labs/starters.txt pins their ids); in a copy without .git, download the lab's files again instead")
	}
	// The committed manifest: a working copy edited by pin is not the
	// starter the repository holds.
	manifest, _, err := lab.ReadManifest(ws)
	if res := ws.Git(ctx, "show", "HEAD:"+lab.ManifestPath); res.Err == nil {
		manifest, err = lab.ParseManifest(string(res.Stdout))
	}
	if err != nil {
		return err
	}
	var starter []string
	prefix := l.Dir() + "/"
	for f := range manifest {
		if strings.HasPrefix(f, prefix) && !strings.Contains(f[len(prefix):], "/") {
			starter = append(starter, f)
		}
	}
	slices.Sort(starter)
	if len(starter) == 0 {
		return p.Errorf("%s lists no file of %s", lab.ManifestPath, l.Dir())
	}
	editable, _, err := lab.Files(ws, l.Dir())
	if err != nil {
		return err
	}
	var present []string
	for _, f := range starter {
		if _, err := os.Stat(ws.Abs(f)); err == nil {
			present = append(present, f)
		}
	}
	ids, err := ws.HashObjects(ctx, present)
	if err != nil {
		return err
	}
	// What differs from the starter: edited or deleted starter files, and
	// editable files the starter does not have.
	var changed, extra []string
	for _, f := range starter {
		if ids[f] != manifest[f] {
			changed = append(changed, f)
		}
	}
	for _, f := range editable {
		if !slices.Contains(starter, f) {
			extra = append(extra, f)
		}
	}
	w := ws.Stdout
	if len(changed) == 0 && len(extra) == 0 {
		p.Fprintf(w, "Lab %s is already the pristine starter: nothing to reset.\n", l.Num())
		return nil
	}
	// Read every blob first, so that a missing one changes nothing.
	blobs := map[string][]byte{}
	for _, f := range changed {
		res := ws.Git(ctx, "cat-file", "blob", manifest[f])
		if res.Err != nil {
			return p.Errorf("%s: the starter's blob %s is not in git (%s): fetch the repository again", f, manifest[f], strings.TrimSpace(string(res.Stderr)))
		}
		blobs[f] = res.Stdout
	}
	backup := backupPath(ws, l)
	p.Fprintf(w, "Reset lab %s to its starter:\n", l.Num())
	for _, f := range changed {
		p.Fprintf(w, "  restore %s\n", f)
	}
	for _, f := range extra {
		p.Fprintf(w, "  remove  %s (not in the starter)\n", f)
	}
	p.Fprintf(w, "Your files will be copied to %s first.\n", backup)
	if !yes && !ws.Confirm(p.Text("Reset? [y/N] ")) {
		p.Fprintln(w, "Nothing changed.")
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(backup), 0o755); err != nil {
		return err
	}
	for n := 2; ; n++ { // two resets in one second keep both backups
		err := os.Mkdir(backup, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) || n > 100 {
			return fmt.Errorf("making the backup directory: %w (nothing was reset)", err)
		}
		backup = backupPath(ws, l) + p.Sprintf("-%d", n)
	}
	var saved []string
	for _, f := range append(slices.Clone(changed), extra...) {
		data, err := os.ReadFile(ws.Abs(f))
		if os.IsNotExist(err) {
			continue // a deleted starter file: nothing to keep
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(backup, path.Base(f)), data, 0o644); err != nil {
			return p.Errorf("backing up %s: %v (nothing was reset)", f, err)
		}
		saved = append(saved, path.Base(f))
	}
	for _, f := range changed {
		if err := os.WriteFile(ws.Abs(f), blobs[f], 0o644); err != nil {
			return err
		}
	}
	for _, f := range extra {
		if err := os.Remove(ws.Abs(f)); err != nil {
			return err
		}
	}
	p.Fprintf(w, "Lab %s is the starter again.\n", l.Num())
	if res := ws.Git(ctx, "status", "--porcelain", "--", l.Dir()); res.Err == nil {
		for _, line := range repo.SplitLines(string(res.Stdout)) {
			if f := strings.TrimSpace(line[min(3, len(line)):]); strings.HasSuffix(f, "_test.go") {
				p.Fprintf(w, "Not reset: %s differs from the repository (reset puts back only the files you edit; git checkout -- %s restores it).\n", f, f)
			}
		}
	}
	for _, base := range saved {
		p.Fprintf(w, "Your %s is kept in %s\n", base, filepath.Join(backup, base))
	}
	return nil
}

// backupPath is where reset keeps a lab's files: .workshop/backups/NN-name-
// date-time.
func backupPath(ws *repo.Workspace, l lab.Lab) string {
	return filepath.Join(ws.Root, filepath.FromSlash(backupDir), l.Name+"-"+time.Now().Format("20060102-150405"))
}
