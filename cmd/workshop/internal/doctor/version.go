package doctor

import (
	"strconv"
	"strings"
)

// atLeast reports whether the Go version have ("go1.26.8", "go1.27rc1",
// "devel go1.27-8a2c1f3 ...", or go.mod's "1.26.0") is want ("1.26" or
// "1.26.0") or newer. A release candidate or beta counts as before its
// release; a version it cannot read is not at least anything.
func atLeast(have, want string) bool {
	h, ok1 := parseVersion(have)
	w, ok2 := parseVersion(want)
	if !ok1 || !ok2 {
		return false
	}
	for i := range h {
		if h[i] != w[i] {
			return h[i] > w[i]
		}
	}
	return true
}

// parseVersion reads a Go version as major, minor, patch and a fourth
// number that is -1 for a prerelease (rc, beta) and 0 for a release.
func parseVersion(v string) ([4]int, bool) {
	var out [4]int
	v = strings.TrimPrefix(v, "devel ")
	v = strings.TrimPrefix(v, "go")
	if i := strings.IndexAny(v, " -+"); i >= 0 { // "1.27-8a2c1f3 Tue ..."
		v = v[:i]
	}
	if i := strings.IndexAny(v, "abcdefghijklmnopqrstuvwxyz"); i >= 0 { // "1.27rc1"
		v, out[3] = v[:i], -1
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}
