package learner

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

var (
	// raceAccess starts one access of a race report: "Read at 0x... by
	// goroutine 10:" or "Previous write at ...".
	raceAccess = regexp.MustCompile(`^\s*((?:Previous )?(?:read|write|Read|Write|atomic read|atomic write|Atomic read|Atomic write)) at 0x[0-9a-f]+ by (goroutine [0-9]+|main goroutine):`)
	// raceFrame is a stack frame's location line: "/path/file.go:12 +0x7d".
	raceFrame = regexp.MustCompile(`^\s*(\S+\.(?:go|s)):([0-9]+)(?: \+0x[0-9a-f]+)?\s*$`)
)

// raceAccessAt is one side of a data race: what was done and where.
type raceAccessAt struct {
	What     string // "write", "previous read"
	Function string // the function of the frame chosen
	File     string // slash path, relative to the repository when inside it
	Line     string
}

// condenseRace reads a test's output and, if it holds a race detector
// report, returns its two accesses, each at the first frame inside labDir
// (the learner's code) or else the first frame outside the Go runtime and
// standard library. ok is false when there is no race report.
func condenseRace(lines []string, root, labDir string) (a, b raceAccessAt, ok bool) {
	var accesses []raceAccessAt
	for i := 0; i < len(lines); i++ {
		m := raceAccess.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		acc := raceAccessAt{What: strings.ToLower(m[1])}
		var fallback *raceAccessAt
		// Frames come in pairs: the function, then its file:line.
		for j := i + 1; j+1 < len(lines) && strings.TrimSpace(lines[j]) != ""; j += 2 {
			f := raceFrame.FindStringSubmatch(lines[j+1])
			if f == nil {
				break
			}
			at := raceAccessAt{What: acc.What, Function: shortFunc(strings.TrimSpace(lines[j])), File: relSlash(root, f[1]), Line: f[2]}
			if strings.HasPrefix(at.File, labDir+"/") && !strings.HasSuffix(at.File, "_test.go") {
				fallback = &at
				break
			}
			if fallback == nil && !filepath.IsAbs(filepath.FromSlash(at.File)) {
				c := at
				fallback = &c
			}
		}
		if fallback != nil {
			acc = *fallback
		}
		accesses = append(accesses, acc)
		if len(accesses) == 2 {
			return accesses[0], accesses[1], true
		}
	}
	return a, b, false
}

// shortFunc turns "github.com/x/y/labs/05-breaker.(*CircuitBreaker).Do()"
// into "(*CircuitBreaker).Do".
func shortFunc(s string) string {
	s = strings.TrimSuffix(s, "()")
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.Index(s, "."); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// relSlash returns p relative to root, with slashes, when p is inside root.
func relSlash(root, p string) string {
	if rel, err := filepath.Rel(root, filepath.FromSlash(p)); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(p)
}

// raceStory is the condensed report check prints instead of the race
// detector's dump: the step, the two accesses and what to do.
func raceStory(info lab.Info, step int, a, b raceAccessAt) []string {
	return []string{
		fmt.Sprintf("step %d: a data race: two goroutines used the same memory at once, and one of them wrote it:", step),
		fmt.Sprintf("    %s at %s:%s in %s", a.What, a.File, a.Line, a.Function),
		fmt.Sprintf("    %s at %s:%s in %s", b.What, b.File, b.Line, b.Function),
		"Guard the state both lines use with the same sync.Mutex (lock before the first read, unlock after the last write),",
		fmt.Sprintf("or use sync/atomic for a lone counter. Read %s.", info.StepLink(step)),
	}
}
