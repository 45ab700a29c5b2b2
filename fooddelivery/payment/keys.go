package payment

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// This file is the payment service's side of lab 08 (idempotency): the
// KeyStore interface a lab plugs in through Deps.Keys, the HTTP layer that
// uses it, and Processor, a model of the card processor behind the service.

// HeaderReplayed is set to "true" on a response that the service replayed
// from its key store instead of running the charge again (Stripe sends the
// same header).
const HeaderReplayed = "Idempotent-Replayed"

// Errors a KeyStore's Begin returns; the service answers each with the
// status the IETF draft draft-ietf-httpapi-idempotency-key-header gives it.
var (
	// ErrKeyMissing: the request carried no Idempotency-Key, and the charge
	// endpoint requires one. Answered 400 "idempotency_key_missing".
	ErrKeyMissing = errors.New("idempotency key missing")
	// ErrKeyInFlight: the first request with this key is still being
	// processed. Answered 409 "idempotency_key_in_use" with Retry-After: 1;
	// the client should retry the same request later.
	ErrKeyInFlight = errors.New("a request with this idempotency key is still in progress")
	// ErrKeyMismatch: the key was already used for a different charge.
	// Answered 422 "idempotency_key_reused".
	ErrKeyMismatch = errors.New("idempotency key reused for a different request")
)

// Outcome is a response the service stored for an idempotency key, to
// replay it to a repeated request.
type Outcome struct {
	Status int    // HTTP status, for example 201 or 402
	Body   []byte // the JSON body exactly as it was sent
}

// KeyStore remembers, per idempotency key, the request that used it and
// the outcome the service gave it. Implementations must be safe for
// concurrent use; Begin must reserve a new key atomically (two concurrent
// Begins with the same new key: exactly one may proceed).
type KeyStore interface {
	// Begin is called before a charge runs, with the request's key ("" if
	// it sent none) and its decoded body. It returns:
	//   - a stored Outcome to replay (nil error): the key was used before for
	//     the same request, which already completed; nothing runs again;
	//   - ErrKeyMissing, ErrKeyInFlight or ErrKeyMismatch (see above);
	//   - nil, nil: the key is now reserved for this request; the service
	//     runs the charge and then calls Finish with the key.
	Begin(key string, req fooddelivery.ChargeRequest) (*Outcome, error)
	// Finish records the outcome of the request that Begin let through.
	// The store decides which outcomes it keeps for replay; an outcome it
	// does not keep releases the key, so a retry runs again.
	Finish(key string, o Outcome)
}

// checkKey puts the rule for fooddelivery.HeaderIdempotencyKey in front of
// the charge handler next: a request that carries the header more than
// once, or whose key breaks fooddelivery.CheckIdempotencyKey (more than
// fooddelivery.MaxIdempotencyKeyLen bytes, only spaces, or anything but
// printable ASCII), is answered 400 "idempotency_key_invalid" with a
// message stating the rule, before the key store, the processor or the
// charge run. A key that is silently cut or ignored would charge a retry
// twice. No header, or an empty one, is no key and passes.
func checkKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := r.Header.Values(fooddelivery.HeaderIdempotencyKey)
		if len(keys) > 1 {
			fooddelivery.WriteError(w, http.StatusBadRequest, "idempotency_key_invalid",
				"send at most one "+fooddelivery.HeaderIdempotencyKey+" header; this request has "+strconv.Itoa(len(keys)))
			return
		}
		if len(keys) == 1 {
			if err := fooddelivery.CheckIdempotencyKey(keys[0]); err != nil {
				fooddelivery.WriteError(w, http.StatusBadRequest, "idempotency_key_invalid", err.Error())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// idempotent puts keys in front of the charge handler next: it decodes the
// body (a malformed body is answered 400 without touching the store, so
// nothing is stored for it, as at Stripe), asks keys.Begin, and replays,
// refuses or runs next and records its outcome with keys.Finish. A handler
// that panics is recorded as a 500, so its key does not stay in flight.
// The key's form was checked before (checkKey, which routes puts in front
// of every charge handler).
func idempotent(keys KeyStore, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := fooddelivery.ReadBody(w, r)
		var req fooddelivery.ChargeRequest
		if err == nil {
			err = fooddelivery.DecodeJSON(body, &req)
		}
		if err != nil {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "body is not a JSON charge request: "+err.Error())
			return
		}
		key := r.Header.Get(fooddelivery.HeaderIdempotencyKey)
		stored, err := keys.Begin(key, req)
		switch {
		case errors.Is(err, ErrKeyMissing):
			fooddelivery.WriteError(w, http.StatusBadRequest, "idempotency_key_missing",
				"POST /charges needs an "+fooddelivery.HeaderIdempotencyKey+" header")
			return
		case errors.Is(err, ErrKeyInFlight):
			w.Header().Set("Retry-After", "1")
			fooddelivery.WriteError(w, http.StatusConflict, "idempotency_key_in_use",
				"a charge with this idempotency key is still being processed; retry later")
			return
		case errors.Is(err, ErrKeyMismatch):
			fooddelivery.WriteError(w, http.StatusUnprocessableEntity, "idempotency_key_reused",
				"this idempotency key was used for a different charge")
			return
		case err != nil:
			fooddelivery.WriteError(w, http.StatusInternalServerError, "idempotency_store_error",
				"the idempotency key store failed, so nothing was charged; try again with the same key")
			return
		case stored != nil:
			w.Header().Set(HeaderReplayed, "true")
			tracing.Event(r.Context(), tracing.EventReplay)
			writeOutcome(w, *stored)
			return
		}
		rec := &recorder{header: http.Header{}}
		finished := false
		defer func() {
			if !finished {
				keys.Finish(key, Outcome{Status: http.StatusInternalServerError})
			}
		}()
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(rec, r)
		o := Outcome{Status: rec.status, Body: rec.body.Bytes()}
		if o.Status == 0 {
			o.Status = http.StatusOK
		}
		keys.Finish(key, o)
		finished = true
		for k, vs := range rec.header {
			w.Header()[k] = vs
		}
		writeOutcome(w, o)
	})
}

func writeOutcome(w http.ResponseWriter, o Outcome) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(o.Status)
	_, _ = w.Write(o.Body)
}

// recorder captures a handler's response so that it can be stored before
// it is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

// ProcessorTimeout is the deadline the payment service gives every call to
// the card processor: a call still running then is abandoned and answered
// 504 "processor_timeout", and nothing is charged after it. It is the
// longest a charge may run between a KeyStore's Begin and its Finish.
const ProcessorTimeout = 30 * time.Second

// Processor models the card processor behind the payment service (lab
// 08): how long it takes to charge, outages during which it fails without
// charging, and how many requests reached it. A nil *Processor is a
// processor that answers at once and never fails.
type Processor struct {
	// Latency is how long each call to the processor takes before the
	// charge is executed: the window between reserving an idempotency key
	// and storing the outcome. Set it before the system starts. Zero means
	// no delay; ProcessorTimeout or more is a processor that hangs: the
	// call is cut at ProcessorTimeout and charges nothing.
	Latency time.Duration

	mu       sync.Mutex
	failNext int
	calls    atomic.Int64
}

// FailNext makes the next n calls fail with 503 "processor_unavailable"
// without charging anything (a short processor outage).
func (p *Processor) FailNext(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext = n
}

// Calls returns how many requests reached the processor: every request
// the idempotency layer let through (replays and refused duplicates do
// not), declined cards included.
func (p *Processor) Calls() int64 {
	if p == nil {
		return 0
	}
	return p.calls.Load()
}

func (p *Processor) wrap(next http.Handler) http.Handler {
	if p == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		if p.Latency >= ProcessorTimeout {
			time.Sleep(ProcessorTimeout)
			fooddelivery.WriteError(w, http.StatusGatewayTimeout, "processor_timeout",
				"the card processor did not answer within "+ProcessorTimeout.String()+"; nothing was charged")
			return
		}
		if p.Latency > 0 {
			// The card network does not stop when our caller hangs up.
			time.Sleep(p.Latency)
		}
		p.mu.Lock()
		down := p.failNext > 0
		if down {
			p.failNext--
		}
		p.mu.Unlock()
		if down {
			fooddelivery.WriteError(w, http.StatusServiceUnavailable, "processor_unavailable",
				"the card processor is unavailable; nothing was charged")
			return
		}
		next.ServeHTTP(w, r)
	})
}
