// Package servetest serves one service on a memnet network for a package's
// own tests: the few lines of listening, serving, dialling and shutting
// down that every service test needs.
package servetest

import (
	"net/http"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/memnet"
)

// Serve starts h as the service name on a new in-memory network and returns
// an http.Client that dials that network (no timeout). When the test ends,
// the client's idle connections, the server and the network are closed, so
// nothing is left for synctest to report. It fails the test if name cannot
// be listened on.
func Serve(t testing.TB, name string, h http.Handler) (*memnet.Network, *http.Client) {
	t.Helper()
	n := memnet.New()
	l, err := n.Listen(name)
	if err != nil {
		t.Fatalf("listening as %s: %v", name, err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	hc := &http.Client{Transport: (&memnet.Dialer{Network: n}).Transport()}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		srv.Close()
		n.Close()
	})
	return n, hc
}
