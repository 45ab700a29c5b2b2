package admin

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"strconv"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/sameorigin"
)

// guard refuses requests a web page could have sent on the user's behalf
// (sameorigin), and changes that are not JSON.
type guard struct {
	origin *sameorigin.Policy
}

func newGuard(port int) *guard { return &guard{origin: sameorigin.For(port)} }

func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, code, msg := g.check(r); status != 0 {
			writeError(w, status, code, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// check returns the refusal for r, or status 0 to let it through. Anything
// it does not recognise is refused.
func (g *guard) check(r *http.Request) (status int, code, msg string) {
	if status, code, msg := g.origin.Check(r); status != 0 {
		return status, code, msg
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		ct := r.Header.Get("Content-Type")
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprintf(
				"a change (%s) needs Content-Type: application/json, even without a body; got %s",
				r.Method, fooddelivery.Quote(ct))
		}
	}
	return 0, "", ""
}

// Guard wraps h with the admin API's guard, for the other pages served
// beside the gateway (/metrics, the dashboard): requests must name
// loopback and the gateway's own port (addr's) in Host and in Origin when
// they send one, and come from the same origin; changes must be JSON.
// It returns an error when addr has no port in 1..65535.
func Guard(addr string, h http.Handler) (http.Handler, error) {
	p, err := gatewayPort(addr)
	if err != nil {
		return nil, err
	}
	return newGuard(p).wrap(h), nil
}

// gatewayPort returns the port of the gateway's address addr (host:port),
// or an error when it has none in 1..65535.
func gatewayPort(addr string) (int, error) {
	_, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || p < 1 || p > 65535 || strconv.Itoa(p) != port {
		return 0, fmt.Errorf("admin: address %q must be the gateway's host:port with a port in 1..65535", addr)
	}
	return p, nil
}

// AllowForwarded allows the admin API, the pages beside it and the GraphQL
// IDE to be reached under hosts too, over HTTPS: the names a
// port-forwarding proxy gives the gateway's port (a GitHub Codespace
// forwards 8080 as NAME-8080.app.github.dev). No hosts allows loopback
// only, the default. Every other host and origin is still refused. It is
// the process's setting (sameorigin.SetForwarded), and returns an error,
// allowing nothing new, for a name that is not a host name.
func AllowForwarded(hosts ...string) error { return sameorigin.SetForwarded(hosts...) }

// Forwarded returns the host names AllowForwarded allowed.
func Forwarded() []string { return sameorigin.Forwarded() }
