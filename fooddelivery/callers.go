package fooddelivery

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery/internal/recent"
)

// Callers records, per request id, the moment the caller of a request gave
// up waiting for it. It is the ground truth behind "work after the caller
// left" (RouteStats.WorkAfterCallerLeft and WastedWork) when the code under
// test builds the contexts a service works with: a service that detaches
// its work from the caller, or a deadline that is wrong, cannot hide the
// waste, because the record is taken on the caller's side of the wire
// (lab 02). All methods are safe for concurrent use; a nil *Callers
// records nothing and knows of no caller that left.
type Callers struct {
	mu   sync.Mutex
	gone *recent.Map[string, time.Time]
}

// MaxCallersGone is how many callers that left a Callers keeps: the
// 20,000 most recent. The record is read while the request is still being
// worked on, seconds after, never 20,000 departures later.
const MaxCallersGone = 20_000

// NewCallers returns an empty record.
func NewCallers() *Callers { return &Callers{gone: recent.NewMap[string, time.Time](MaxCallersGone)} }

// GaveUp records that the caller of the request with id gave up at at. The
// earliest record of an id wins. An empty id is ignored.
func (c *Callers) GaveUp(id string, at time.Time) {
	if c == nil || id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.gone.Get(id); !ok || at.Before(prev) {
		c.gone.Put(id, at)
	}
}

// Gone returns when the caller of the request with id gave up, and false
// if it has not (or id is empty).
func (c *Callers) Gone(id string) (time.Time, bool) {
	if c == nil || id == "" {
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone.Get(id)
}

// Track wraps base (nil means http.DefaultTransport) for a client whose
// callers c watches. Every request sent through it carries a request id in
// HeaderRequestID (a fresh NewRequestID when it has none), and when the
// request's context ends before the response body is closed (the caller
// timed out or was cancelled while it still waited), Track records the
// moment with GaveUp. A nil c returns base unchanged.
func (c *Callers) Track(base http.RoundTripper) http.RoundTripper {
	if c == nil {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		id := r.Header.Get(HeaderRequestID)
		if id == "" {
			id = RequestIDFrom(r.Context())
			if id == "" {
				id = NewRequestID()
			}
			r = r.Clone(r.Context())
			r.Header.Set(HeaderRequestID, id)
		}
		stop := context.AfterFunc(r.Context(), func() { c.GaveUp(id, time.Now()) })
		resp, err := base.RoundTrip(r)
		if err != nil {
			// The context's end may wake base before it starts the
			// AfterFunc; if stop wins that race, record the moment here.
			if stop() && r.Context().Err() != nil {
				c.GaveUp(id, time.Now())
			}
			return nil, err
		}
		resp.Body = &stopOnClose{ReadCloser: resp.Body, stop: stop}
		return resp, nil
	})
}

// stopOnClose calls stop when the body is closed: from then on the caller
// no longer waits, so a later end of its context is not giving up.
type stopOnClose struct {
	io.ReadCloser
	stop func() bool
}

func (b *stopOnClose) Close() error {
	b.stop()
	return b.ReadCloser.Close()
}
