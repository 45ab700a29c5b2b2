// Package hedging is the reference solution of lab 09: an http.RoundTripper
// that hedges idempotent reads to a second replica after a delay taken from
// observed latency, within a budget. See NOTES.md for the trade-offs.
package hedging

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Hedger is an http.RoundTripper that hedges reads (Dean and Barroso, The
// Tail at Scale, CACM 2013): it sends a GET or HEAD to the replica its URL
// names, and if no answer has come after the hedge delay, sends a copy to
// the next replica. The first answer wins (any HTTP response, whatever its
// status); the other attempt is cancelled and its response, if any, closed.
// Other methods go to their one replica, unhedged: a write sent twice may
// be done twice.
//
//	menus := menu.NewClient(&http.Client{Transport: &Hedger{
//		Base:      transport,
//		Replicas:  []string{"menu-1", "menu-2", "menu-3"},
//		Latencies: NewLatencyTracker(2000, 0.95, 50*time.Millisecond),
//		Budget:    NewHedgeBudget(0.1, 100),
//	}}, "http://menu-1", "http://menu-2", "http://menu-3")
type Hedger struct {
	// Base sends each attempt. Required.
	Base http.RoundTripper
	// Replicas are the URL hosts of the replicas, exactly as requests
	// carry them ("menu-1", ...; "menu-1:8080" if the URLs have a port). A
	// request whose URL host is not among them is not hedged; a hedge goes
	// to the replica after the request's own, in this order.
	Replicas []string
	// Delay is how long a read waits for its first attempt before the
	// hedge is sent, when Latencies is nil. Zero sends both at once.
	Delay time.Duration
	// Latencies, when set, gives the delay (Latencies.Delay) and records
	// every hedged-eligible read's latency until its first answer.
	Latencies *LatencyTracker
	// Budget, when set, limits hedges; nil hedges every read that waits
	// longer than the delay (for tests; in production, set one).
	Budget *HedgeBudget
}

// attempt is what one of the two attempts came back with.
type attempt struct {
	n      int // 0 for the first attempt, 1 for the hedge
	resp   *http.Response
	err    error
	cancel context.CancelFunc
}

// RoundTrip implements http.RoundTripper. It returns the first answer; the
// winner's context stays alive until its body is closed, so the caller can
// read the body after the loser was cancelled. An attempt that fails
// without an answer (a reset connection, say) is not replaced: if the
// other attempt is still out, RoundTrip waits for it; if it fails before
// the hedge was sent, RoundTrip returns its error at once (retrying is
// another pattern). When both fail, the first error is returned.
func (h *Hedger) RoundTrip(req *http.Request) (*http.Response, error) {
	hedgeHost, ok := h.hedgeTarget(req)
	if !ok {
		return h.Base.RoundTrip(req)
	}
	if h.Budget != nil {
		h.Budget.Request()
	}
	delay := h.Delay
	if h.Latencies != nil {
		delay = h.Latencies.Delay()
	}
	began := time.Now()
	// Buffered for both attempts: an attempt that finishes after the
	// winner never blocks, so no goroutine is left behind.
	results := make(chan attempt, 2)
	var cancels []context.CancelFunc // one context per attempt: cancelling the loser spares the winner
	send := func(r *http.Request) {
		ctx, cancel := context.WithCancel(req.Context())
		r = r.Clone(ctx)
		cancels = append(cancels, cancel)
		if len(cancels) > 1 {
			r.Header.Set(fooddelivery.HeaderAttempt, strconv.Itoa(len(cancels)))
		}
		n := len(cancels) - 1
		go func() {
			resp, err := h.Base.RoundTrip(r)
			results <- attempt{n, resp, err, cancel}
		}()
	}
	send(req)
	timer := time.NewTimer(delay)
	defer timer.Stop()
	out := 1
	var firstErr error
	for {
		select {
		case <-timer.C:
			// An answer due at the same instant as the timer comes first:
			// select picks among ready cases at random, so with an answer
			// waiting no hedge is sent and the next turn takes it (the
			// timer has fired and stays quiet): a run sends the same
			// hedges every time.
			if len(results) > 0 {
				break // out of the select, not the loop
			}
			if h.Budget == nil || h.Budget.TryHedge() {
				hedge := req.Clone(req.Context())
				hedge.URL.Host, hedge.Host = hedgeHost, hedgeHost
				if req.GetBody != nil {
					hedge.Body, _ = req.GetBody()
				}
				send(hedge)
				out++
			}
		case a := <-results:
			out--
			if a.err != nil {
				a.cancel()
				if firstErr == nil {
					firstErr = a.err
				}
				if out == 0 {
					return nil, firstErr
				}
				continue
			}
			if h.Latencies != nil {
				h.Latencies.Observe(time.Since(began))
			}
			for i, cancel := range cancels {
				if i != a.n { // the loser: cancel it now, close whatever it returns
					cancel()
				}
			}
			if out > 0 {
				go discard(results)
			}
			a.resp.Body = &cancelOnClose{ReadCloser: a.resp.Body, cancel: a.cancel}
			return a.resp, nil
		}
	}
}

// discard waits for the losing attempt, cancels it and closes its
// response, so that its connection is released.
func discard(results <-chan attempt) {
	a := <-results
	if a.resp != nil {
		a.resp.Body.Close()
	}
	a.cancel()
}

// hedgeTarget returns the replica a hedge of req would go to, and whether
// req may be hedged at all: it must be an idempotent read (GET or HEAD)
// whose body, if any, can be sent twice, addressed to one of the replicas.
func (h *Hedger) hedgeTarget(req *http.Request) (string, bool) {
	if req.Method != "" && req.Method != http.MethodGet && req.Method != http.MethodHead { // "" means GET
		return "", false
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return "", false
	}
	i := slices.Index(h.Replicas, req.URL.Host)
	if i < 0 || len(h.Replicas) < 2 {
		return "", false
	}
	return h.Replicas[(i+1)%len(h.Replicas)], true
}

// cancelOnClose cancels the winning attempt's context when its body is
// closed: not before, or the body could not be read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
