package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// checkGo compares the go command's version with go.mod's go line and
// reports whether the labs can build with it.
func checkGo(ctx context.Context, ws *repo.Workspace, r *report) bool {
	mod, err := readGoMod(ctx, ws)
	if err != nil {
		r.line(failing, "Go", err.Error(), "run doctor from a clone of the workshop whose go.mod is intact")
		return false
	}
	want := mod.Go
	env, err := ws.GoEnv(ctx, "GOVERSION", "GOTOOLCHAIN", "GOWORK", "GOFLAGS")
	if err != nil {
		fix := installGo(want)
		if t := os.Getenv("GOTOOLCHAIN"); t != "" {
			fix = fmt.Sprintf("unset GOTOOLCHAIN (it is %q here), or set it to local or auto; if that is not it, %s", t, fix)
		}
		r.line(failing, "Go", fmt.Sprintf("the go command (%s) does not answer: %s", ws.GoBin, firstLines(err.Error(), 2)), fix)
		return false
	}
	if strings.Contains(env["GOFLAGS"], "-mod=vendor") {
		r.line(failing, "Go", fmt.Sprintf("GOFLAGS=%s builds from a vendor directory, which the workshop does not have", env["GOFLAGS"]),
			"go env -u GOFLAGS (or unset GOFLAGS in your shell), then run doctor again")
		return false
	}
	if w := env["GOWORK"]; w != "" && w != "off" {
		r.line(failing, "Go", fmt.Sprintf("a go.work file (%s) decides which modules build, not the workshop's go.mod", w),
			"unset GOWORK, or run the workshop from a directory outside that workspace (GOWORK=off go run ./cmd/workshop doctor tries it)")
		return false
	}
	running := env["GOVERSION"]
	local := ws.RunCmdEnv(ctx, time.Minute, []string{"GOTOOLCHAIN=local"}, ws.GoBin, "env", "GOVERSION")
	installed := strings.TrimSpace(string(local.Stdout))
	if local.Err != nil || installed == "" {
		installed = running
	}
	switch {
	case !atLeast(running, want):
		r.line(failing, "Go", fmt.Sprintf("the go command runs %s; the workshop needs Go %s or newer (testing/synctest, the Prometheus client)", running, want), installGo(want))
		return false
	case !atLeast(installed, want):
		r.line(warned, "Go", fmt.Sprintf("the installed Go is %s, older than the %s go.mod asks for, so the go command runs %s, a toolchain it downloaded (GOTOOLCHAIN=%s)",
			installed, want, running, env["GOTOOLCHAIN"]),
			"it works while that toolchain stays in the module cache; "+installGo(want))
	default:
		r.line(passed, "Go", fmt.Sprintf("%s on %s/%s (the workshop needs %s or newer)", running, runtime.GOOS, runtime.GOARCH, want), "")
	}
	return true
}

// installGo is the fix for a Go that is missing or too old.
func installGo(want string) string {
	return fmt.Sprintf("install Go %s or newer from https://go.dev/dl/ and open a new terminal", want)
}

// goMod is the part of `go mod edit -json` doctor reads.
type goMod struct {
	Go      string
	Require []struct{ Path, Version string }
}

// readGoMod reads the main module's go.mod through the go command, which
// needs no network for it.
func readGoMod(ctx context.Context, ws *repo.Workspace) (goMod, error) {
	var m goMod
	res := ws.GoCmd(ctx, time.Minute, "mod", "edit", "-json")
	if res.Err != nil {
		return m, fmt.Errorf("go mod edit -json: %v: %s", res.Err, firstLines(string(res.Stderr), 3))
	}
	if err := json.Unmarshal(res.Stdout, &m); err != nil || m.Go == "" {
		return m, fmt.Errorf("go.mod in %s has no go line", ws.Root)
	}
	return m, nil
}

// download is one module of `go mod download -json`.
type download struct {
	Path, Version, Error string
}

// checkModules reports whether every module go.mod requires is in the
// module cache and the module's packages and tests load with the module
// proxy off.
func checkModules(ctx context.Context, ws *repo.Workspace, r *report) bool {
	const fix = "go mod download (while you have a network connection), then run doctor again"
	mod, err := readGoMod(ctx, ws)
	if err != nil {
		r.line(failing, "modules", err.Error(), "")
		return false
	}
	offline := []string{"GOPROXY=off"}
	if len(mod.Require) > 0 {
		args := []string{"mod", "download", "-json"}
		for _, m := range mod.Require {
			args = append(args, m.Path+"@"+m.Version)
		}
		res := ws.RunCmdEnv(ctx, 5*time.Minute, offline, ws.GoBin, args...)
		missing, err := missingModules(res.Stdout)
		if err != nil {
			r.line(failing, "modules", fmt.Sprintf("go mod download -json: %v: %s", err, firstLines(string(res.Stderr), 1)), fix)
			return false
		}
		if len(missing) > 0 {
			r.line(failing, "modules", fmt.Sprintf("%d of the %d modules the labs, the tool and the system need are not in the module cache, so nothing builds offline: %s",
				len(missing), len(mod.Require), listSome(missing, 6)), fix)
			return false
		}
	}
	res := ws.RunCmdEnv(ctx, 5*time.Minute, offline, ws.GoBin, "list", "-mod=readonly", "-deps", "-test", "-f", "{{.ImportPath}}", "./...")
	if res.Err != nil {
		r.line(failing, "modules", "with the module proxy off, the packages do not load: "+firstLines(string(res.Stderr), 1), fix)
		return false
	}
	found := fmt.Sprintf("all %d modules go.mod requires are in the module cache", len(mod.Require))
	if len(mod.Require) == 0 {
		found = "go.mod requires no other module"
	}
	r.line(passed, "modules", found+": the labs, the tool and the system build offline", "")
	return true
}

// missingModules reads the stream of `go mod download -json` and returns
// "path version" of each module it could not find.
func missingModules(out []byte) ([]string, error) {
	var missing []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var d download
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return missing, nil
		} else if err != nil {
			return nil, err
		}
		if d.Error != "" {
			missing = append(missing, d.Path+" "+d.Version)
		}
	}
}

// checkCompiler reports whether go test -race can run here, and warns
// with the fix when it cannot.
func checkCompiler(ctx context.Context, ws *repo.Workspace, r *report) bool {
	const what = "C compiler"
	const without = "check and verify run without the race detector (a data race in a breaker or a budget can pass by luck)"
	env, err := ws.GoEnv(ctx, "CGO_ENABLED", "CC", "GOOS", "GOARCH")
	if err != nil {
		r.line(warned, what, "go env does not answer: "+firstLines(err.Error(), 1), "")
		return false
	}
	if !repo.RaceSupported(env["GOOS"], env["GOARCH"]) {
		r.line(warned, what, fmt.Sprintf("the race detector does not exist for %s/%s: %s", env["GOOS"], env["GOARCH"], without),
			"work in the dev container (.devcontainer/) for -race")
		return false
	}
	cc := strings.Fields(env["CC"])
	if len(cc) == 0 {
		cc = []string{"gcc"}
	}
	path, err := exec.LookPath(cc[0])
	switch {
	case err != nil && env["CGO_ENABLED"] == "1":
		r.line(failing, what, fmt.Sprintf("cgo is on (CGO_ENABLED=1) but its C compiler, CC=%s, is not on PATH: the system and the labs do not build", env["CC"]),
			"unset CC (go env -u CC) or install it; or turn cgo off with CGO_ENABLED=0, and check runs without -race")
		return false
	case err != nil:
		r.line(warned, what, fmt.Sprintf("no %s on PATH: %s", cc[0], without), installCompiler(env["GOOS"]))
		return false
	case env["CGO_ENABLED"] != "1":
		r.line(warned, what, fmt.Sprintf("%s is there but cgo is off (CGO_ENABLED=%s): %s", path, env["CGO_ENABLED"], without),
			"set CGO_ENABLED=1 (go env -w CGO_ENABLED=1)")
		return false
	}
	r.line(passed, what, fmt.Sprintf("%s: check and verify use the race detector", path), "")
	return true
}

// installCompiler is how to get a C compiler on goos.
func installCompiler(goos string) string {
	switch goos {
	case "darwin":
		return "xcode-select --install (Apple's command line tools), then open a new terminal"
	case "windows":
		return "install gcc from MSYS2 (https://www.msys2.org/, package mingw-w64-ucrt-x86_64-gcc) and put its bin directory on PATH, or work in WSL or the dev container"
	default:
		return "sudo apt install gcc (Debian, Ubuntu), sudo dnf install gcc (Fedora), or your system's package of gcc"
	}
}

// checkPort reports whether the gateway can listen on addr.
func checkPort(r *report, addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		r.line(warned, "port", fmt.Sprintf("the gateway's address %s is taken: %s", addr, firstLines(err.Error(), 1)),
			"stop what listens there, or start the system with -addr 127.0.0.1:9090 and give admin the same -addr")
		return
	}
	l.Close()
	r.line(passed, "port", addr+" is free for the gateway", "")
}

// The free space doctor asks for where the build cache lives: the first
// build of every lab, the system and the tool, with and without -race,
// fills about 0.4 GB (382 MB on Linux with Go 1.26.8), and the cache grows
// with every lab a learner changes.
const (
	minFreeBytes = 1 << 30 // under it: FAIL
	lowFreeBytes = 3 << 30 // under it: warn
)

// checkDisk reports the free space on the file system of the build cache.
func checkDisk(ctx context.Context, ws *repo.Workspace, r *report) {
	env, err := ws.GoEnv(ctx, "GOCACHE")
	dir := env["GOCACHE"]
	if err != nil || dir == "" || dir == "off" {
		r.line(warned, "disk", "the build cache has no directory (GOCACHE): every run builds from scratch", "unset GOCACHE, or set it to a directory")
		return
	}
	for { // the cache may not exist yet: measure where it will be
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	free, err := freeBytes(dir)
	found := fmt.Sprintf("%s free for the build cache (%s)", gigabytes(free), env["GOCACHE"])
	const fix = "free some space there, or point GOCACHE at a disk with more (go env -w GOCACHE=DIR)"
	switch {
	case err != nil:
		r.line(warned, "disk", fmt.Sprintf("the free space at %s is unknown: %v", dir, err), "")
	case free < minFreeBytes:
		r.line(failing, "disk", found+"; the first builds need about 0.4 GB, and the cache grows with each change", fix)
	case free < lowFreeBytes:
		r.line(warned, "disk", found+"; that is little: the build cache grows with each lab you change", fix)
	default:
		r.line(passed, "disk", found, "")
	}
}

// gigabytes writes n bytes as "12.3 GB".
func gigabytes(n uint64) string {
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}

// listSome joins the first n items and counts the rest.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// firstLines returns s's first n non-blank lines, trimmed, joined by " / ".
func firstLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && len(out) < n {
			out = append(out, l)
		}
	}
	return strings.Join(out, " / ")
}
