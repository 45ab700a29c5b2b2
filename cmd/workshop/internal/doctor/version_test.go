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

func TestCheckAddr(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", "localhost:9090", "[::1]:8080", "127.0.0.2:1", "127.0.0.1:65535"} {
		if err := checkAddr(ok); err != nil {
			t.Errorf("checkAddr(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "notaport", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:http", "0.0.0.0:8080", ":8080", "example.com:80", "10.0.0.1:8080"} {
		if err := checkAddr(bad); err == nil {
			t.Errorf("checkAddr(%q) = nil, want an error", bad)
		}
	}
}
