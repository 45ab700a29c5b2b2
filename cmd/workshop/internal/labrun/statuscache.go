package labrun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// The status cache keeps the `go test -json` events of each lab's last run,
// keyed by everything that decides the lab's result, so that status shows
// an unchanged lab at once. go's own test cache does this only for
// packages that pass, and a learner's labs mostly fail.
//
// A lab's key is a SHA-256 over: the go command and its version, GOOS,
// GOARCH, GOFLAGS, GOEXPERIMENT, CGO_ENABLED, CC and GODEBUG; go.mod and the
// go.work in use; the go test flags; every file in the lab's directory (testdata included); and every
// package its test binary links: the Go, cgo and embedded files of the
// packages of this module (and of replaced modules), the path and version
// of every other module's package (the standard library is covered by the
// go version). Only complete runs are stored (completeRun): never a build
// failure, a timeout, a killed binary or an interrupted run, and never a
// run during which the lab's files changed (the keys are computed again
// after the run and must be the same). Entries live in the user's cache directory, never in the
// repository, and are dropped after statusCacheTTL.
type statusCache struct {
	dir  string
	keys map[string]string // lab package import path -> key
}

// statusCacheTTL is how long an unused entry is kept.
const statusCacheTTL = 7 * 24 * time.Hour

// workshopCacheDir returns the tool's directory in the user's cache
// directory (created when missing).
func workshopCacheDir(sub string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "gophereats-workshop", sub)
	return dir, os.MkdirAll(dir, 0o755)
}

// listedPackage is the part of `go list -json` the key needs.
type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Module     *struct {
		Path, Version string
		Main          bool
		Replace       *struct{ Path, Version string }
	}
	GoFiles, CgoFiles, CFiles, HFiles, SFiles, EmbedFiles []string
	TestGoFiles, XTestGoFiles                             []string
	Deps                                                  []string
}

// newStatusCache computes the key of each lab package in pkgs (import
// paths) for a go test run with flags. It returns an error when the keys
// cannot be computed; status then runs every lab.
func newStatusCache(ctx context.Context, ws *repo.Workspace, pkgs map[string]string, flags []string) (*statusCache, error) {
	dir, err := workshopCacheDir("status")
	if err != nil {
		return nil, err
	}
	env, err := ws.GoEnv(ctx, "GOVERSION", "GOOS", "GOARCH", "GOFLAGS", "GOEXPERIMENT", "CGO_ENABLED", "GOWORK", "CC")
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, pattern := range pkgs {
		patterns = append(patterns, pattern)
	}
	sort.Strings(patterns)
	res := ws.GoCmd(ctx, time.Minute, append([]string{"list", "-e", "-deps", "-test", "-json"}, patterns...)...)
	if res.Err != nil {
		return nil, fmt.Errorf("go list: %v", res.Err)
	}
	listed := map[string]*listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(res.Stdout))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %v", err)
		}
		listed[p.ImportPath] = &p
	}
	common := sha256.New()
	fmt.Fprintf(common, "workshop status cache 1\n%s\n", ws.GoBin)
	for _, k := range []string{"GOVERSION", "GOOS", "GOARCH", "GOFLAGS", "GOEXPERIMENT", "CGO_ENABLED", "CC"} {
		fmt.Fprintf(common, "%s=%s\n", k, env[k])
	}
	fmt.Fprintf(common, "GODEBUG=%s\nflags=%q\n", os.Getenv("GODEBUG"), flags)
	// go.mod and go.work hold godebug and toolchain lines, which decide
	// results too.
	for _, f := range []string{filepath.Join(ws.Root, "go.mod"), env["GOWORK"]} {
		if f == "" || f == "off" {
			continue
		}
		sum, err := fileSum(f, map[string]string{})
		if err != nil {
			sum = "absent"
		}
		fmt.Fprintf(common, "%s %s\n", f, sum)
	}

	c := &statusCache{dir: dir, keys: map[string]string{}}
	fileSums := map[string]string{} // path -> content hash, shared by the labs
	for path := range pkgs {
		main := listed[path+".test"]
		Lab := listed[path]
		if main == nil || Lab == nil {
			continue // not loadable: run it
		}
		h := sha256.New()
		h.Write(common.Sum(nil))
		if err := hashTree(h, Lab.Dir, fileSums); err != nil {
			continue
		}
		deps := append([]string{}, main.Deps...)
		sort.Strings(deps)
		for _, d := range deps {
			p := listed[d]
			switch {
			case p == nil:
				fmt.Fprintf(h, "dep %s ?\n", d)
			case p.Standard:
			case p.Module != nil && !p.Module.Main && p.Module.Replace == nil:
				fmt.Fprintf(h, "dep %s %s@%s\n", d, p.Module.Path, p.Module.Version)
			default:
				fmt.Fprintf(h, "dep %s\n", d)
				files := slices.Concat(p.GoFiles, p.CgoFiles, p.CFiles, p.HFiles, p.SFiles, p.EmbedFiles, p.TestGoFiles, p.XTestGoFiles)
				sort.Strings(files)
				for _, f := range files {
					sum, err := fileSum(filepath.Join(p.Dir, f), fileSums)
					if err != nil {
						sum = "unreadable"
					}
					fmt.Fprintf(h, "%s %s\n", f, sum)
				}
			}
		}
		c.keys[path] = hex.EncodeToString(h.Sum(nil))
	}
	return c, nil
}

// hashTree writes every file below dir, with its path relative to dir, to h.
func hashTree(h io.Writer, dir string, sums map[string]string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		sum, err := fileSum(p, sums)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "lab %s %s\n", filepath.ToSlash(rel), sum)
		return nil
	})
}

func fileSum(p string, sums map[string]string) (string, error) {
	if s, ok := sums[p]; ok {
		return s, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(data)
	sums[p] = hex.EncodeToString(s[:])
	return sums[p], nil
}

// completeRun reports whether a package's run is one to keep or to trust
// from the cache: it built, ended with its own pass or fail, and every
// test that started finished, none of them by the -timeout panic (go
// test puts that panic in the running test's output) or a killed binary.
func completeRun(pkg *gotest.Package) bool {
	if pkg == nil || pkg.BuildFailed || (pkg.Action != "pass" && pkg.Action != "fail") || len(pkg.Tests) == 0 {
		return false
	}
	timedOut := func(lines []string) bool {
		for _, line := range lines {
			if strings.Contains(line, "panic: test timed out") || strings.HasPrefix(strings.TrimSpace(line), "signal: ") {
				return true
			}
		}
		return false
	}
	if timedOut(pkg.Output) {
		return false
	}
	for _, t := range pkg.Tests {
		if t.Action == "" || timedOut(t.Output) {
			return false
		}
	}
	return true
}

// load returns the stored events of lab package path, or nil.
func (c *statusCache) load(path string) []byte {
	key, ok := c.keys[path]
	if !ok {
		return nil
	}
	file := filepath.Join(c.dir, key+".json")
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	now := time.Now()
	os.Chtimes(file, now, now) // still in use: keep it
	return data
}

// store keeps the events of a finished run of lab package path, unless the
// run is not one to keep (see statusCache).
func (c *statusCache) store(path string, pkg *gotest.Package, events []byte) {
	key, ok := c.keys[path]
	if !ok || !completeRun(pkg) {
		return
	}
	tmp, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(events)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(c.dir, key+".json")) != nil {
		os.Remove(tmp.Name())
	}
}

// prune removes entries unused for statusCacheTTL.
func (c *statusCache) prune() {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > statusCacheTTL {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
}
