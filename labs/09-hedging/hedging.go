// Package hedging is lab 09 of the workshop: the gateway reads menus from
// one of three replicas and waits for it, however long it stalls. Read
// README.md, then make `go test ./labs/09-hedging/` pass by editing this
// file and policy.go.
package hedging

import (
	"net/http"
	"time"
)

// Hedger is an http.RoundTripper that should hedge reads: send a GET or
// HEAD to the replica its URL names and, if no answer has come after the
// hedge delay, send a copy to another replica; the first answer wins and
// the other attempt is cancelled.
type Hedger struct {
	// Base sends each attempt. Required.
	Base http.RoundTripper
	// Replicas are the URL hosts of the replicas, exactly as requests
	// carry them ("menu-1", ...; "menu-1:8080" if the URLs have a port). A
	// request whose URL host is not among them is not hedged; a hedge goes
	// to the replica after the request's own, in this order.
	Replicas []string
	// Delay is how long a read waits for its first attempt before the
	// hedge is sent, when Latencies is nil.
	Delay time.Duration
	// Latencies, when set, gives the delay (Latencies.Delay) and records
	// every hedgeable read's latency until its first answer.
	Latencies *LatencyTracker
	// Budget, when set, limits hedges; nil means no limit.
	Budget *HedgeBudget
}

// RoundTrip implements http.RoundTripper. For now it sends every request
// to the one replica its URL names and waits for it.
func (h *Hedger) RoundTrip(req *http.Request) (*http.Response, error) {
	// TODO(step 1): if no answer has come after the delay, send a copy of
	// the request to the next replica (change the URL's host); return the
	// first answer and cancel the other attempt. Leave nothing behind: no
	// goroutine blocked forever, no response body left open.
	// TODO(step 2): take the delay from h.Latencies when it is set, and
	// record each read's latency (until its first answer) in it.
	// TODO(step 3): hedge only idempotent reads (GET, HEAD; an empty
	// Method means GET).
	// TODO(step 4): with h.Budget set, count every hedgeable request and
	// send a hedge only when the budget allows it.
	// TODO(step 5): the caller reads the winner's body after RoundTrip
	// returns: cancelling the loser must not cut the winner's body short.
	return h.Base.RoundTrip(req)
}
