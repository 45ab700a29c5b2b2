// Package sameorigin refuses requests that a web page of another site
// could have sent to the running system on the user's behalf. The system
// binds loopback only, so the threat is a page in the user's browser:
// under another host name (DNS rebinding), from another origin, or marked
// cross-site by the browser. The admin API, /metrics, the dashboard and the
// GraphQL IDE all use it.
package sameorigin

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gophereats/resilience/fooddelivery"
)

// loopbackHosts are the names a request may give the system's host.
var loopbackHosts = []string{"127.0.0.1", "localhost", "[::1]"}

// Policy accepts the requests for one loopback port.
type Policy struct {
	port    string
	hosts   []string // allowed Host values
	origins []string // allowed Origin values
}

// For returns the policy of the system listening on port: a Host must be
// 127.0.0.1, localhost or [::1] with that port (without it for port 80, as
// browsers leave the default port out), and so must an Origin, with
// http://. The forwarded hosts (SetForwarded) are accepted too, over
// HTTPS: a Host of the name alone or with :443, an Origin https://name.
func For(port int) *Policy {
	p := &Policy{port: strconv.Itoa(port)}
	for _, h := range loopbackHosts {
		p.hosts = append(p.hosts, h+":"+p.port)
		p.origins = append(p.origins, "http://"+h+":"+p.port)
	}
	if port == 80 {
		for _, h := range loopbackHosts {
			p.hosts = append(p.hosts, h)
			p.origins = append(p.origins, "http://"+h)
		}
	}
	if f := forwarded.Load(); f != nil {
		for _, h := range *f {
			p.hosts = append(p.hosts, h, h+":443")
			p.origins = append(p.origins, "https://"+h)
		}
	}
	return p
}

// forwarded holds the host names SetForwarded allowed; nil for none.
var forwarded atomic.Pointer[[]string]

// SetForwarded allows the system's pages and admin API to be reached
// under hosts as well, the names a port-forwarding proxy in front of the
// loopback port gives them (GitHub Codespaces forwards port 8080 as
// https://NAME-8080.app.github.dev), replacing what an earlier call
// allowed; none allows loopback only, the default. Every other host, and
// every other origin, is still refused. It is the process's setting, made
// once at start (cmd/fooddelivery's -allow-host). It returns an error,
// allowing nothing new, when a name is not a DNS host name of at least two
// labels (letters, digits and hyphens; no port, scheme, path, wildcard or
// IP address).
func SetForwarded(hosts ...string) error {
	names := make([]string, 0, len(hosts))
	for _, h := range hosts {
		name := strings.ToLower(h)
		if err := checkHostName(name); err != nil {
			return fmt.Errorf("forwarded host %s: %w", fooddelivery.Quote(h), err)
		}
		names = append(names, name)
	}
	forwarded.Store(&names)
	return nil
}

// Forwarded returns the host names SetForwarded allowed, in lower case.
func Forwarded() []string {
	if f := forwarded.Load(); f != nil {
		return slices.Clone(*f)
	}
	return nil
}

// checkHostName says what is wrong with name as a forwarded host.
func checkHostName(name string) error {
	if name == "" || len(name) > 253 {
		return fmt.Errorf("give a host name of 1 to 253 characters, as in NAME-8080.app.github.dev")
	}
	if net.ParseIP(strings.Trim(name, "[]")) != nil {
		return fmt.Errorf("an IP address is no forwarded host name; loopback addresses are allowed already")
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return fmt.Errorf("give a full host name with a domain, as in NAME-8080.app.github.dev")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return fmt.Errorf("label %s: a host name has labels of 1 to 63 letters, digits and inner hyphens, and no port, scheme, path or wildcard", fooddelivery.Quote(l))
		}
	}
	return nil
}

// Check returns the refusal of r (403, a code and a message that says
// why), or status 0 to let it through. Anything it does not recognise is
// refused: codes "host_refused", "cross_origin" and "cross_site".
func (p *Policy) Check(r *http.Request) (status int, code, msg string) {
	if !slices.Contains(p.hosts, strings.ToLower(r.Host)) {
		return http.StatusForbidden, "host_refused", fmt.Sprintf(
			"Host %s is refused: the admin API and the pages beside it answer only requests for %s (the gateway's own port %s on loopback), "+
				"so that a web page cannot reach them under another name", fooddelivery.Quote(r.Host), strings.Join(p.hosts[:3], ", "), p.port)
	}
	if origins, ok := r.Header["Origin"]; ok {
		if len(origins) != 1 || !slices.Contains(p.origins, strings.ToLower(origins[0])) {
			return http.StatusForbidden, "cross_origin", fmt.Sprintf(
				"Origin %s is refused: these pages take requests only from themselves (%s) or from tools that send no Origin, such as curl",
				fooddelivery.Quote(strings.Join(origins, ", ")), strings.Join(p.origins[:3], ", "))
		}
	}
	if sites, ok := r.Header["Sec-Fetch-Site"]; ok {
		if len(sites) != 1 || (sites[0] != "same-origin" && sites[0] != "none") {
			return http.StatusForbidden, "cross_site", fmt.Sprintf(
				"Sec-Fetch-Site %s is refused: the browser says another site sent this request; only same-origin requests are taken",
				fooddelivery.Quote(strings.Join(sites, ", ")))
		}
	}
	return 0, "", ""
}

// Internal wraps the handler of a service that only the system's own
// processes call (every service but the gateway), so that a web page in
// the user's browser cannot reach it either: requests with an Origin
// header or a Sec-Fetch-Site other than none (what browsers send, and the
// system's clients never do) are refused, and so is a Host that is
// neither loopback (127.0.0.1, localhost, [::1]) nor a service's or
// container's own name, which has no dot ("payment", "menu-2"): a page
// that rebinds its own domain name to 127.0.0.1 sends that name. Each
// refusal is a 403 JSON error, "host_refused", "cross_origin" or
// "cross_site".
func Internal(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		switch {
		case host != "127.0.0.1" && host != "::1" && (host == "" || strings.ContainsAny(host, ".:")):
			fooddelivery.WriteError(w, http.StatusForbidden, "host_refused", fmt.Sprintf(
				"Host %s is refused: this service answers the system's own calls only, for its service name or a loopback address", fooddelivery.Quote(r.Host)))
		case len(r.Header.Values("Origin")) > 0:
			fooddelivery.WriteError(w, http.StatusForbidden, "cross_origin",
				"a request with an Origin header is refused: this service answers the system's own calls only, never a web page's")
		case len(r.Header.Values("Sec-Fetch-Site")) > 0 && r.Header.Get("Sec-Fetch-Site") != "none":
			fooddelivery.WriteError(w, http.StatusForbidden, "cross_site",
				"a request a browser marks as sent by a page is refused: this service answers the system's own calls only")
		default:
			next.ServeHTTP(w, r)
		}
	})
}
