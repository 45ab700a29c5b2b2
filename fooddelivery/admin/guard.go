package admin

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
)

// loopbackHosts are the names a request may give the gateway's host.
var loopbackHosts = []string{"127.0.0.1", "localhost", "[::1]"}

// guard refuses requests a web page could have sent on the user's behalf.
type guard struct {
	port    string
	hosts   []string // allowed Host values
	origins []string // allowed Origin values
}

func newGuard(port int) *guard {
	g := &guard{port: strconv.Itoa(port)}
	for _, h := range loopbackHosts {
		g.hosts = append(g.hosts, h+":"+g.port)
		g.origins = append(g.origins, "http://"+h+":"+g.port)
	}
	if port == 80 { // browsers leave the default port out
		for _, h := range loopbackHosts {
			g.hosts = append(g.hosts, h)
			g.origins = append(g.origins, "http://"+h)
		}
	}
	return g
}

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
	allowed := strings.Join(g.hosts[:3], ", ")
	if !slices.Contains(g.hosts, strings.ToLower(r.Host)) {
		return http.StatusForbidden, "host_refused", fmt.Sprintf(
			"Host %s is refused: the admin API and the pages beside it answer only requests for %s (the gateway's own port %s on loopback), "+
				"so that a web page cannot reach it under another name", fooddelivery.Quote(r.Host), allowed, g.port)
	}
	if origins, ok := r.Header["Origin"]; ok {
		if len(origins) != 1 || !slices.Contains(g.origins, strings.ToLower(origins[0])) {
			return http.StatusForbidden, "cross_origin", fmt.Sprintf(
				"Origin %s is refused: the admin API takes requests only from its own pages (%s) or from tools that send no Origin, such as curl",
				fooddelivery.Quote(strings.Join(origins, ", ")), strings.Join(g.origins[:3], ", "))
		}
	}
	if sites, ok := r.Header["Sec-Fetch-Site"]; ok {
		if len(sites) != 1 || (sites[0] != "same-origin" && sites[0] != "none") {
			return http.StatusForbidden, "cross_site", fmt.Sprintf(
				"Sec-Fetch-Site %s is refused: the browser says another site sent this request; only same-origin requests are taken",
				fooddelivery.Quote(strings.Join(sites, ", ")))
		}
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
	_, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || p < 1 || p > 65535 || strconv.Itoa(p) != port {
		return nil, fmt.Errorf("admin: address %q must be the gateway's host:port with a port in 1..65535", addr)
	}
	return newGuard(p).wrap(h), nil
}
