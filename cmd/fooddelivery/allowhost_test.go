package main

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/admin"
	"github.com/gophereats/resilience/fooddelivery/labtest"
)

// -allow-host (or FOODDELIVERY_ALLOW_HOST, as the dev container sets it
// in a Codespace) lets the dashboard answer under the forwarded host, and
// the banner says so; a bad name is a usage error from the flag, and from
// the environment a warning that leaves loopback only.
func TestAllowHostLetsTheForwardedHostIn(t *testing.T) {
	t.Cleanup(func() { _ = admin.AllowForwarded() })
	const fwd = "fluffy-space-8080.app.github.dev"
	r := startRun(t, "-allow-host", fwd)
	if !strings.Contains(r.out.String(), "forwarded host:   https://"+fwd+"/") {
		t.Errorf("the banner should name the forwarded host; it is:\n%s", r.out)
	}
	get := func(host, origin string) int {
		req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(r.url, "/graphql")+"/dashboard/state", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(fwd, "https://"+fwd); got != http.StatusOK {
		t.Errorf("the dashboard's state under the forwarded host answered %d, want 200", got)
	}
	if got := get(fwd, "https://attacker.example"); got != http.StatusForbidden {
		t.Errorf("a forged Origin under the forwarded host answered %d, want 403", got)
	}
	if got := get("attacker.example", ""); got != http.StatusForbidden {
		t.Errorf("an unknown Host answered %d, want 403", got)
	}
	r.stop()

	var usage *usageError
	if err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-allow-host", "*.app.github.dev"}, io.Discard, io.Discard); !errors.As(err, &usage) ||
		!strings.Contains(err.Error(), "-allow-host") {
		t.Errorf("-allow-host with a wildcard: %v, want a usage error naming the flag", err)
	}

	_ = admin.AllowForwarded()
	t.Setenv(allowEnv, "-8080.")
	var stderr labtest.SyncBuffer
	r = startRunLogging(t, &stderr)
	if !strings.Contains(stderr.String(), allowEnv+`="-8080." is no host name`) || len(admin.Forwarded()) != 0 {
		t.Errorf("an empty Codespace name in %s: stderr %q, forwarded %v; want a warning and loopback only", allowEnv, stderr.String(), admin.Forwarded())
	}
	r.stop()
}
