package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// workspace is the repository the tool works on and the tools it runs.
type workspace struct {
	stdin  io.Reader     // where confirmations and watch's commands are read
	in     *bufio.Reader // stdin's lines, once read (see input)
	root   string        // absolute path of the directory holding go.mod
	module string        // module path from go.mod
	goBin  string        // the go command
	stdout io.Writer
	stderr io.Writer
}

// openWorkspace finds the repository containing dir (or the working
// directory when dir is empty) and the go command.
func openWorkspace(dir string, stdout, stderr io.Writer) (*workspace, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root := abs
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return nil, fmt.Errorf("no go.mod in %s or any parent directory: run the tool from inside the workshop repository", abs)
		}
		root = parent
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	module := modulePath(data)
	if module == "" {
		return nil, fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
	}
	if _, err := os.Stat(filepath.Join(root, "labs")); err != nil {
		return nil, fmt.Errorf("%s is not the workshop's repository (it has no labs/ directory): run the tool from inside the workshop, or name it with -C", root)
	}
	return &workspace{
		stdin:  os.Stdin,
		root:   root,
		module: module,
		goBin:  findGo(),
		stdout: stdout,
		stderr: stderr,
	}, nil
}

// modulePath returns the module path declared in a go.mod file.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}

// findGo returns the go command: the one on PATH, else the one of the
// toolchain this program was built with.
func findGo() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	name := "go"
	if runtime.GOOS == "windows" {
		name = "go.exe"
	}
	return filepath.Join(runtime.GOROOT(), "bin", name)
}

// cmdResult is what a finished subprocess produced.
type cmdResult struct {
	stdout []byte
	stderr []byte
	err    error // nil when the command exited 0
}

// combined returns stderr followed by stdout, as lines without trailing blanks.
func (r cmdResult) combined() []string {
	return splitLines(string(r.stderr) + string(r.stdout))
}

// runCmd runs name with args in the repository root. A context deadline of
// limit (when positive) guards against a hung subprocess.
func (ws *workspace) runCmd(ctx context.Context, limit time.Duration, name string, args ...string) cmdResult {
	return ws.runCmdEnv(ctx, limit, nil, name, args...)
}

// runCmdEnv is runCmd with env ("NAME=value" entries) added to this
// process's environment.
func (ws *workspace) runCmdEnv(ctx context.Context, limit time.Duration, env []string, name string, args ...string) cmdResult {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = ws.root
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.WaitDelay = 5 * time.Second
	ownProcessGroup(cmd)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), ctx.Err())
	}
	return cmdResult{stdout: out.Bytes(), stderr: errb.Bytes(), err: err}
}

// goCmd runs the go command in the repository root.
func (ws *workspace) goCmd(ctx context.Context, limit time.Duration, args ...string) cmdResult {
	return ws.runCmd(ctx, limit, ws.goBin, args...)
}

// goTest runs `go test -json` with args and parses its events. The test
// binary's own -timeout is testTimeout; the go command as a whole gets two
// more minutes for building.
func (ws *workspace) goTest(ctx context.Context, testTimeout time.Duration, args ...string) (*testRun, cmdResult) {
	full := append([]string{"test", "-json", "-timeout", testTimeout.String()}, args...)
	res := ws.goCmd(ctx, testTimeout+2*time.Minute, full...)
	run := parseTestJSON(bytes.NewReader(res.stdout))
	return run, res
}

// goTestStream is goTest that feeds the events to p as they come and calls
// done with each package as soon as go test reports it finished (go test
// -json streams each package's events as its test binary runs), before
// the whole run ends. done must not block long.
func (ws *workspace) goTestStream(ctx context.Context, testTimeout time.Duration, p *testParser, done func(*pkgResult), args ...string) (*testRun, cmdResult) {
	ctx, cancel := context.WithTimeout(ctx, testTimeout+2*time.Minute)
	defer cancel()
	full := append([]string{"test", "-json", "-timeout", testTimeout.String()}, args...)
	cmd := exec.CommandContext(ctx, ws.goBin, full...)
	cmd.Dir = ws.root
	cmd.WaitDelay = 5 * time.Second
	ownProcessGroup(cmd)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		return &testRun{Packages: map[string]*pkgResult{}}, cmdResult{err: err}
	}
	if err := cmd.Start(); err != nil {
		return &testRun{Packages: map[string]*pkgResult{}}, cmdResult{err: err}
	}
	var raw bytes.Buffer
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		raw.Write(sc.Bytes())
		raw.WriteByte('\n')
		if pkg := p.line(sc.Bytes()); pkg != nil && done != nil {
			done(pkg)
		}
	}
	io.Copy(io.Discard, out) // a line too long for the scanner: drain the rest
	err = cmd.Wait()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("go %s: %w", strings.Join(full, " "), ctx.Err())
	}
	return p.finish(), cmdResult{stdout: raw.Bytes(), stderr: errb.Bytes(), err: err}
}

// goEnv returns the values of the named go env variables.
func (ws *workspace) goEnv(ctx context.Context, names ...string) (map[string]string, error) {
	res := ws.goCmd(ctx, time.Minute, append([]string{"env"}, names...)...)
	if res.err != nil {
		return nil, fmt.Errorf("go env: %v\n%s", res.err, res.stderr)
	}
	lines := strings.Split(strings.ReplaceAll(string(res.stdout), "\r\n", "\n"), "\n")
	env := make(map[string]string, len(names))
	for i, n := range names {
		if i < len(lines) {
			env[n] = strings.TrimSpace(lines[i])
		}
	}
	return env, nil
}

// raceAvailable reports whether `go test -race` can work here: a target
// platform the race detector supports, cgo enabled and a C compiler on PATH.
func (ws *workspace) raceAvailable(ctx context.Context) bool {
	env, err := ws.goEnv(ctx, "CGO_ENABLED", "CC", "GOOS", "GOARCH")
	if err != nil || env["CGO_ENABLED"] != "1" || !raceSupported(env["GOOS"], env["GOARCH"]) {
		return false
	}
	cc := strings.Fields(env["CC"])
	if len(cc) == 0 {
		return false
	}
	_, err = exec.LookPath(cc[0])
	return err == nil
}

// raceSupported reports whether the race detector exists for goos/goarch,
// as in the go command's internal/platform.RaceDetectorSupported (Go 1.26).
// Windows on ARM, for one, has cgo but no race detector.
func raceSupported(goos, goarch string) bool {
	switch goos {
	case "linux":
		return goarch == "amd64" || goarch == "arm64" || goarch == "loong64" || goarch == "ppc64le" || goarch == "riscv64" || goarch == "s390x"
	case "darwin":
		return goarch == "amd64" || goarch == "arm64"
	case "freebsd", "netbsd", "windows":
		return goarch == "amd64"
	default:
		return false
	}
}

// git runs git in the repository root; it reports errNoGit when git is not
// installed.
func (ws *workspace) git(ctx context.Context, args ...string) cmdResult {
	bin, err := exec.LookPath("git")
	if err != nil {
		return cmdResult{err: errNoGit}
	}
	return ws.runCmd(ctx, time.Minute, bin, args...)
}

var errNoGit = errors.New("git is not installed")

// inGitCheckout reports whether git is installed and the repository root is
// inside a git work tree.
func (ws *workspace) inGitCheckout(ctx context.Context) bool {
	res := ws.git(ctx, "rev-parse", "--is-inside-work-tree")
	return res.err == nil && strings.TrimSpace(string(res.stdout)) == "true"
}

// hashObjects returns the git blob id of each file (slash paths relative to
// the root), as `git hash-object` computes it (with the repository's filters,
// so line-ending conversion does not change the id).
func (ws *workspace) hashObjects(ctx context.Context, paths []string) (map[string]string, error) {
	ids := make(map[string]string, len(paths))
	const batch = 100 // keep command lines short (Windows)
	for start := 0; start < len(paths); start += batch {
		part := paths[start:min(start+batch, len(paths))]
		args := []string{"hash-object", "--"}
		for _, p := range part {
			args = append(args, filepath.FromSlash(p))
		}
		res := ws.git(ctx, args...)
		if res.err != nil {
			return nil, fmt.Errorf("git hash-object: %v %s", res.err, strings.TrimSpace(string(res.stderr)))
		}
		got := strings.Fields(string(res.stdout))
		if len(got) != len(part) {
			return nil, fmt.Errorf("git hash-object: got %d ids for %d files", len(got), len(part))
		}
		for i, p := range part {
			ids[p] = got[i]
		}
	}
	return ids, nil
}

// splitLines splits text into lines, dropping "\r" and trailing empty lines.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// firstLines returns at most n lines, with a last line saying how many
// were left out.
func firstLines(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	out := append([]string{}, lines[:n]...)
	return append(out, fmt.Sprintf("... (%d more lines)", len(lines)-n))
}
