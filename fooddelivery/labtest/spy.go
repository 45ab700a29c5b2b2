package labtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Spy is an http.RoundTripper that records every request passing through
// it, one Attempt each, and tracks what happens to each response body it
// hands out. Put it below the code under test (a retrying or hedging
// transport) to see each attempt that code makes:
//
//	spy := &labtest.Spy{Base: (&memnet.Dialer{Network: sys.Network}).Transport()}
//	client := &http.Client{Transport: &hedging.Hedger{Base: spy}}
//
// Set the hooks before the requests they are for start; the Spy is safe
// for concurrent use.
type Spy struct {
	// Base sends the requests. It must not be nil.
	Base http.RoundTripper

	// Before, when not nil, runs before attempt n (1-based, in the order
	// the attempts reached the Spy) is sent.
	Before func(n int)
	// After, when not nil, runs when attempt n's answer (or error) arrived.
	After func(n int)
	// SwapBody, when not nil and returning non-nil, replaces the body of
	// attempt n's response (the original body is closed).
	SwapBody func(n int) io.ReadCloser

	mu       sync.Mutex
	attempts []*Attempt
}

// Attempt is one request the Spy passed on.
type Attempt struct {
	Host, Method, Path string          // from the request URL: "menu-1", "GET", "/restaurants/luigis/menu"
	Ctx                context.Context // the request's context, to check it was cancelled
	Start              time.Time       // when the attempt reached the Spy
	End                time.Time       // when its answer or error arrived; zero until then
	Status             int             // the response's status code; 0 when no response arrived
	Err                error           // the error Base returned, if any
	Body               *Body           // the response body handed out; nil when no response arrived
}

// RoundTrip records the attempt and sends it with Base.
func (s *Spy) RoundTrip(req *http.Request) (*http.Response, error) {
	a := &Attempt{Host: req.URL.Host, Method: req.Method, Path: req.URL.Path, Ctx: req.Context(), Start: time.Now()}
	s.mu.Lock()
	s.attempts = append(s.attempts, a)
	n := len(s.attempts)
	before, after, swap := s.Before, s.After, s.SwapBody
	s.mu.Unlock()
	if before != nil {
		before(n)
	}
	resp, err := s.Base.RoundTrip(req)
	s.mu.Lock()
	a.End, a.Err = time.Now(), err
	if resp != nil {
		a.Status = resp.StatusCode
		if swap != nil {
			if b := swap(n); b != nil {
				resp.Body.Close()
				resp.Body = b
			}
		}
		a.Body = &Body{ReadCloser: resp.Body}
		resp.Body = a.Body
	}
	s.mu.Unlock()
	if after != nil {
		after(n)
	}
	return resp, err
}

// CloseIdleConnections passes the call on to Base when Base has it, so a
// client above the Spy can close its connections at shutdown.
func (s *Spy) CloseIdleConnections() {
	if c, ok := s.Base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Count returns the number of attempts so far.
func (s *Spy) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.attempts)
}

// CountMethod returns the number of attempts so far made with method.
func (s *Spy) CountMethod(method string) int {
	n := 0
	for _, a := range s.Attempts() {
		if a.Method == method {
			n++
		}
	}
	return n
}

// Attempts returns a copy of the attempts so far, in the order they
// reached the Spy.
func (s *Spy) Attempts() []Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Attempt, len(s.attempts))
	for i, a := range s.attempts {
		out[i] = *a
	}
	return out
}

// Gaps returns the time between the end of each attempt and the start of
// the next one; for the attempts of a single request, its backoff delays.
func (s *Spy) Gaps() []time.Duration {
	all := s.Attempts()
	var out []time.Duration
	for i := 1; i < len(all); i++ {
		out = append(out, all[i].Start.Sub(all[i-1].End))
	}
	return out
}

// OpenBodies counts the response bodies handed out and not closed yet.
func (s *Spy) OpenBodies() int {
	open := 0
	for _, a := range s.Attempts() {
		if a.Body != nil && !a.Body.Closed() {
			open++
		}
	}
	return open
}

// CloseBodies closes every response body still open, for a cleanup: a body
// the code under test dropped would otherwise pin net/http goroutines past
// the end of the test.
func (s *Spy) CloseBodies() {
	for _, a := range s.Attempts() {
		if a.Body != nil {
			a.Body.Close()
		}
	}
}

// Timeline says what became of each attempt, timed from began (from the
// first attempt's start when began is zero), for a failure message:
// "menu-1 sent at 0s, failed at 60ms (read: connection reset); menu-2
// sent at 50ms, answered 200 at 100ms", or "none". The gap between one
// attempt's answer and the next one's start is a retry's backoff.
func Timeline(attempts []Attempt, began time.Time) string {
	if began.IsZero() && len(attempts) > 0 {
		began = attempts[0].Start
	}
	var parts []string
	for _, a := range attempts {
		p := fmt.Sprintf("%s sent at %v", a.Host, a.Start.Sub(began))
		switch {
		case a.End.IsZero():
			p += ", still waiting"
		case a.Err != nil:
			p += fmt.Sprintf(", failed at %v (%v)", a.End.Sub(began), a.Err)
		default:
			p += fmt.Sprintf(", answered %d at %v", a.Status, a.End.Sub(began))
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// Timeline is Timeline of the attempts so far, timed from the first.
func (s *Spy) Timeline() string { return Timeline(s.Attempts(), time.Time{}) }

// Hosts lists where the attempts so far went, for messages: "menu-1, menu-2".
func (s *Spy) Hosts() string { return Hosts(s.Attempts()) }

// Hosts lists the hosts of attempts, comma separated, or "none".
func Hosts(attempts []Attempt) string {
	var hs []string
	for _, a := range attempts {
		hs = append(hs, a.Host)
	}
	if len(hs) == 0 {
		return "none"
	}
	return strings.Join(hs, ", ")
}

// Body is a response body the Spy handed out. It records how many bytes
// were read, whether it was read to io.EOF and whether it was closed.
type Body struct {
	io.ReadCloser
	mu     sync.Mutex
	read   int64
	eof    bool
	closed bool
}

// Read reads from the response body and records it.
func (b *Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.read += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	b.mu.Unlock()
	return n, err
}

// Close closes the response body and records it.
func (b *Body) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return b.ReadCloser.Close()
}

// State returns the bytes read so far, whether the body was read to
// io.EOF, and whether it was closed.
func (b *Body) State() (read int64, eof, closed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read, b.eof, b.closed
}

// Closed reports whether the body was closed.
func (b *Body) Closed() bool {
	_, _, closed := b.State()
	return closed
}
