package repo

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

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
	"github.com/gophereats/resilience/cmd/workshop/internal/i18n"
)

// Workspace is the repository the tool works on and the tools it runs.
type Workspace struct {
	Stdin  io.Reader     // where confirmations and watch's commands are read
	in     *bufio.Reader // stdin's lines, once read (see input)
	Root   string        // absolute path of the directory holding go.mod
	Module string        // module path from go.mod
	GoBin  string        // the go command
	Stdout io.Writer
	Stderr io.Writer
	// Gate, when set, limits how many go commands run at once; the time a
	// run waits for it does not count against the run's limit.
	Gate *Gate
	// Env is added to every subprocess's environment ("NAME=value").
	Env []string
	// P is the language of the learner's commands; nil speaks English, as
	// verify, status -json and the other commands always do.
	P *i18n.Printer
}

// Open finds the repository containing dir (or the working
// directory when dir is empty) and the go command.
func Open(dir string, stdout, stderr io.Writer) (*Workspace, error) {
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
	return &Workspace{
		Stdin:  os.Stdin,
		Root:   root,
		Module: module,
		GoBin:  findGo(),
		Stdout: stdout,
		Stderr: stderr,
	}, nil
}

// Abs returns the absolute path of a slash path from the root.
func (ws *Workspace) Abs(rel string) string {
	return filepath.Join(ws.Root, filepath.FromSlash(rel))
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

// Result is what a finished subprocess produced.
type Result struct {
	Stdout []byte
	Stderr []byte
	Err    error // nil when the command exited 0
}

// Combined returns stderr followed by stdout, as lines without trailing blanks.
func (r Result) Combined() []string {
	return SplitLines(string(r.Stderr) + string(r.Stdout))
}

// RunCmd runs name with args in the repository root. A context deadline of
// limit (when positive) guards against a hung subprocess.
func (ws *Workspace) RunCmd(ctx context.Context, limit time.Duration, name string, args ...string) Result {
	return ws.RunCmdEnv(ctx, limit, nil, name, args...)
}

// RunCmdEnv is runCmd with env ("NAME=value" entries) added to this
// process's environment.
func (ws *Workspace) RunCmdEnv(ctx context.Context, limit time.Duration, env []string, name string, args ...string) Result {
	if name == ws.GoBin { // git and gofmt are quick: only go commands wait at the gate
		if err := ws.Gate.acquire(ctx); err != nil {
			return Result{Err: err}
		}
		defer ws.Gate.release()
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = ws.Root
	if len(env) > 0 || len(ws.Env) > 0 {
		cmd.Env = append(append(os.Environ(), ws.Env...), env...)
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
	return Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), Err: err}
}

// GoCmd runs the go command in the repository root.
func (ws *Workspace) GoCmd(ctx context.Context, limit time.Duration, args ...string) Result {
	return ws.RunCmd(ctx, limit, ws.GoBin, args...)
}

// GoTest runs `go test -json` with args and parses its events. The test
// binary's own -timeout is testTimeout; the go command as a whole gets two
// more minutes for building.
func (ws *Workspace) GoTest(ctx context.Context, testTimeout time.Duration, args ...string) (*gotest.Run, Result) {
	return ws.GoTestEnv(ctx, testTimeout, nil, args...)
}

// GoTestEnv is GoTest with env ("NAME=value" entries) added to the go
// command's environment.
func (ws *Workspace) GoTestEnv(ctx context.Context, testTimeout time.Duration, env []string, args ...string) (*gotest.Run, Result) {
	full := append([]string{"test", "-json", "-timeout", testTimeout.String()}, args...)
	res := ws.RunCmdEnv(ctx, testTimeout+2*time.Minute, env, ws.GoBin, full...)
	run := gotest.Parse(bytes.NewReader(res.Stdout))
	return run, res
}

// GoTestStream is goTest that feeds the events to p as they come and calls
// done with each package as soon as go test reports it finished (go test
// -json streams each package's events as its test binary runs), before
// the whole run ends. done must not block long.
func (ws *Workspace) GoTestStream(ctx context.Context, testTimeout time.Duration, p *gotest.Parser, done func(*gotest.Package), args ...string) (*gotest.Run, Result) {
	if err := ws.Gate.acquire(ctx); err != nil {
		return &gotest.Run{Packages: map[string]*gotest.Package{}}, Result{Err: err}
	}
	defer ws.Gate.release()
	ctx, cancel := context.WithTimeout(ctx, testTimeout+2*time.Minute)
	defer cancel()
	full := append([]string{"test", "-json", "-timeout", testTimeout.String()}, args...)
	cmd := exec.CommandContext(ctx, ws.GoBin, full...)
	cmd.Dir = ws.Root
	if len(ws.Env) > 0 {
		cmd.Env = append(os.Environ(), ws.Env...)
	}
	cmd.WaitDelay = 5 * time.Second
	ownProcessGroup(cmd)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		return &gotest.Run{Packages: map[string]*gotest.Package{}}, Result{Err: err}
	}
	if err := cmd.Start(); err != nil {
		return &gotest.Run{Packages: map[string]*gotest.Package{}}, Result{Err: err}
	}
	var raw bytes.Buffer
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		raw.Write(sc.Bytes())
		raw.WriteByte('\n')
		if pkg := p.Line(sc.Bytes()); pkg != nil && done != nil {
			done(pkg)
		}
	}
	io.Copy(io.Discard, out) // a line too long for the scanner: drain the rest
	err = cmd.Wait()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("go %s: %w", strings.Join(full, " "), ctx.Err())
	}
	return p.Finish(), Result{Stdout: raw.Bytes(), Stderr: errb.Bytes(), Err: err}
}

// GoEnv returns the values of the named go env variables.
func (ws *Workspace) GoEnv(ctx context.Context, names ...string) (map[string]string, error) {
	res := ws.GoCmd(ctx, time.Minute, append([]string{"env"}, names...)...)
	if res.Err != nil {
		return nil, fmt.Errorf("go env: %v\n%s", res.Err, res.Stderr)
	}
	lines := strings.Split(strings.ReplaceAll(string(res.Stdout), "\r\n", "\n"), "\n")
	env := make(map[string]string, len(names))
	for i, n := range names {
		if i < len(lines) {
			env[n] = strings.TrimSpace(lines[i])
		}
	}
	return env, nil
}

// RaceAvailable reports whether `go test -race` can work here: a target
// platform the race detector supports, cgo enabled and a C compiler on PATH.
func (ws *Workspace) RaceAvailable(ctx context.Context) bool {
	env, err := ws.GoEnv(ctx, "CGO_ENABLED", "CC", "GOOS", "GOARCH")
	if err != nil || env["CGO_ENABLED"] != "1" || !RaceSupported(env["GOOS"], env["GOARCH"]) {
		return false
	}
	cc := strings.Fields(env["CC"])
	if len(cc) == 0 {
		return false
	}
	_, err = exec.LookPath(cc[0])
	return err == nil
}

// RaceSupported reports whether the race detector exists for goos/goarch,
// as in the go command's internal/platform.RaceDetectorSupported (Go 1.26).
// Windows on ARM, for one, has cgo but no race detector.
func RaceSupported(goos, goarch string) bool {
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

// Git runs git in the repository root; it reports errNoGit when git is not
// installed.
func (ws *Workspace) Git(ctx context.Context, args ...string) Result {
	bin, err := exec.LookPath("git")
	if err != nil {
		return Result{Err: errNoGit}
	}
	return ws.RunCmd(ctx, time.Minute, bin, args...)
}

var errNoGit = errors.New("git is not installed")

// InGitCheckout reports whether git is installed and the repository root is
// inside a git work tree.
func (ws *Workspace) InGitCheckout(ctx context.Context) bool {
	res := ws.Git(ctx, "rev-parse", "--is-inside-work-tree")
	return res.Err == nil && strings.TrimSpace(string(res.Stdout)) == "true"
}

// HashObjects returns the git blob id of each file (slash paths relative to
// the root), as `git hash-object` computes it (with the repository's filters,
// so line-ending conversion does not change the id).
func (ws *Workspace) HashObjects(ctx context.Context, paths []string) (map[string]string, error) {
	ids := make(map[string]string, len(paths))
	const batch = 100 // keep command lines short (Windows)
	for start := 0; start < len(paths); start += batch {
		part := paths[start:min(start+batch, len(paths))]
		args := []string{"hash-object", "--"}
		for _, p := range part {
			args = append(args, filepath.FromSlash(p))
		}
		res := ws.Git(ctx, args...)
		if res.Err != nil {
			return nil, fmt.Errorf("git hash-object: %v %s", res.Err, strings.TrimSpace(string(res.Stderr)))
		}
		got := strings.Fields(string(res.Stdout))
		if len(got) != len(part) {
			return nil, fmt.Errorf("git hash-object: got %d ids for %d files", len(got), len(part))
		}
		for i, p := range part {
			ids[p] = got[i]
		}
	}
	return ids, nil
}

// SplitLines splits text into lines, dropping "\r" and trailing empty lines.
func SplitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// FirstLines returns at most n lines, with a last line saying how many
// were left out.
func FirstLines(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	out := append([]string{}, lines[:n]...)
	return append(out, fmt.Sprintf("... (%d more lines)", len(lines)-n))
}
