package doctor

import "testing"

func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		have, want string
		ok         bool
	}{
		{"go1.26.8", "1.26.0", true},
		{"go1.26", "1.26.0", true},
		{"go1.26.0", "1.26", true},
		{"go1.27.1", "1.26.0", true},
		{"go2.0.0", "1.26.0", true},
		{"go1.25.9", "1.26.0", false},
		{"go1.9", "1.26.0", false},
		{"go1.26rc1", "1.26.0", false},
		{"go1.27rc1", "1.26.0", true},
		{"devel go1.27-8a2c1f3 Tue Dec 1 10:00:00 2026 +0000", "1.26.0", true},
		{"", "1.26.0", false},
		{"go", "1.26.0", false},
		{"go1.x", "1.26.0", false},
		{"go1.26.8", "", false},
	} {
		if got := atLeast(c.have, c.want); got != c.ok {
			t.Errorf("atLeast(%q, %q) = %v, want %v", c.have, c.want, got, c.ok)
		}
	}
}
