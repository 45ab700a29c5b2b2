package fooddelivery_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/memnet"
)

var sentinels = []error{
	fooddelivery.ErrTimeout, fooddelivery.ErrUnavailable, fooddelivery.ErrOverloaded,
	fooddelivery.ErrRejected, fooddelivery.ErrNotFound, fooddelivery.ErrUnauthorized,
}

// assertOnly checks that err is exactly one of the sentinels: want.
func assertOnly(t *testing.T, err, want error, what string) {
	t.Helper()
	for _, s := range sentinels {
		if s == want {
			assert.ErrorIs(t, err, s, "%s must be classified as %v", what, s)
		} else {
			assert.NotErrorIs(t, err, s, "%s must not be classified as %v", what, s)
		}
	}
}

func response(status int, dontRetry bool, body string) *http.Response {
	h := http.Header{}
	if dontRetry {
		h.Set(fooddelivery.HeaderDontRetry, "1")
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

func TestReadErrorClassifiesStatuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cases := []struct {
			status    int
			dontRetry bool
			want      error
		}{
			{503, true, fooddelivery.ErrOverloaded},
			{503, false, fooddelivery.ErrUnavailable},
			{504, false, fooddelivery.ErrTimeout},
			{504, true, fooddelivery.ErrTimeout},
			{500, false, fooddelivery.ErrUnavailable},
			{502, false, fooddelivery.ErrUnavailable},
			{429, false, fooddelivery.ErrUnavailable},
			{401, false, fooddelivery.ErrUnauthorized},
			{403, false, fooddelivery.ErrUnauthorized},
			{404, false, fooddelivery.ErrNotFound},
			{400, false, fooddelivery.ErrRejected},
			{402, false, fooddelivery.ErrRejected},
			{409, false, fooddelivery.ErrRejected},
			{422, false, fooddelivery.ErrRejected},
		}
		for _, tc := range cases {
			resp := response(tc.status, tc.dontRetry, `{"code":"some_code","message":"some message"}`)
			resp.Header.Set("Retry-After", "7")
			err := fooddelivery.ReadError("payment", resp)
			what := http.StatusText(tc.status)
			if tc.dontRetry {
				what += " with don't-retry"
			}
			assertOnly(t, err, tc.want, what)

			var ce *fooddelivery.CallError
			require.True(t, errors.As(err, &ce), "%s: want a *CallError, got %T", what, err)
			assert.Equal(t, "payment", ce.Service, "%s: service", what)
			assert.Equal(t, tc.status, ce.Status, "%s: status", what)
			assert.Equal(t, "some_code", ce.Code, "%s: code from the ErrorBody", what)
			assert.Equal(t, "some message", ce.Message, "%s: message from the ErrorBody", what)
			assert.Equal(t, tc.dontRetry, ce.DontRetry, "%s: don't-retry", what)
			assert.Equal(t, "7", ce.RetryAfter, "%s: Retry-After", what)
			assert.Nil(t, ce.Cause, "%s: an HTTP answer has no transport cause", what)
		}
	})
}

func TestReadErrorWithoutAnErrorBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		err := fooddelivery.ReadError("menu", response(502, false, "<html>bad gateway</html>"))
		assertOnly(t, err, fooddelivery.ErrUnavailable, "a 502 with an HTML body")
		assert.Equal(t, "menu: unavailable: HTTP 502", err.Error(), "message without an ErrorBody")
	})
}

func TestClassifyTransportErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cases := []struct {
			name string
			err  error
			want error
		}{
			{"a context deadline", context.DeadlineExceeded, fooddelivery.ErrTimeout},
			{"an I/O deadline", os.ErrDeadlineExceeded, fooddelivery.ErrTimeout},
			{"a net.Error timeout", timeoutErr{}, fooddelivery.ErrTimeout},
			{"a refused connection", syscall.ECONNREFUSED, fooddelivery.ErrUnavailable},
			{"a reset connection", syscall.ECONNRESET, fooddelivery.ErrUnavailable},
			{"an unexpected EOF", io.ErrUnexpectedEOF, fooddelivery.ErrUnavailable},
			{"a cancelled context", context.Canceled, fooddelivery.ErrUnavailable},
		}
		for _, tc := range cases {
			err := fooddelivery.ClassifyTransportError("payment", tc.err)
			assertOnly(t, err, tc.want, tc.name)
			assert.ErrorIs(t, err, tc.err, "%s stays reachable as the cause", tc.name)
		}
		assert.NoError(t, fooddelivery.ClassifyTransportError("payment", nil), "no error, nothing to classify")
	})
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// netHarness is a tiny server on memnet (every path answered by one
// handler) and a client whose dialer gives up after 100ms.
type netHarness struct {
	n  *memnet.Network
	hc *http.Client
}

func serve(t *testing.T, handler http.HandlerFunc, clientTimeout time.Duration) *netHarness {
	t.Helper()
	n := memnet.New()
	l, err := n.Listen("dep")
	require.NoError(t, err, "listen")
	srv := &http.Server{Handler: handler}
	go srv.Serve(l)
	hc := &http.Client{Transport: (&memnet.Dialer{Network: n, Timeout: 100 * time.Millisecond}).Transport(), Timeout: clientTimeout}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		srv.Close()
		n.Close()
	})
	return &netHarness{n: n, hc: hc}
}

func TestCallJSONClassifiesRealTransportFailures(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	cases := []struct {
		name      string
		handler   http.HandlerFunc
		fault     memnet.ConnectFault
		ctxTO     time.Duration // 0: no deadline
		clientTO  time.Duration // http.Client.Timeout; 0: none
		want      error
		wantCause error
		wantText  string
	}{
		{name: "a hang cut by the context deadline", handler: hang, ctxTO: time.Second,
			want: fooddelivery.ErrTimeout, wantCause: context.DeadlineExceeded,
			wantText: `dep: timed out: Get "http://dep/x": context deadline exceeded`},
		{name: "a hang cut by http.Client.Timeout", handler: hang, clientTO: time.Second,
			want: fooddelivery.ErrTimeout},
		{name: "a refused connect", fault: memnet.Refused,
			want: fooddelivery.ErrUnavailable, wantCause: syscall.ECONNREFUSED},
		{name: "a black-holed connect cut by the dial timeout", fault: memnet.BlackHoled,
			want: fooddelivery.ErrTimeout, wantCause: os.ErrDeadlineExceeded},
		{name: "a connection reset before the answer", handler: func(w http.ResponseWriter, r *http.Request) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		}, want: fooddelivery.ErrUnavailable},
		{name: "a body trickled past the deadline", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"a":`))
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}, ctxTO: time.Second, want: fooddelivery.ErrTimeout, wantCause: context.DeadlineExceeded},
		{name: "a body that is not JSON", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("not json"))
		}, want: fooddelivery.ErrUnavailable},
		{name: "a body over 1 MiB", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`"` + strings.Repeat("x", fooddelivery.MaxResponseBytes) + `"`))
		}, want: fooddelivery.ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := serve(t, tc.handler, tc.clientTO)
				h.n.SetConnectFault("dep", tc.fault)
				ctx := t.Context()
				if tc.ctxTO > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxTO)
					defer cancel()
				}
				var out any
				_, err := fooddelivery.CallJSON(ctx, h.hc, "dep", http.MethodGet, "http://dep/x", nil, nil, &out)
				assertOnly(t, err, tc.want, tc.name)
				if tc.wantCause != nil {
					assert.ErrorIs(t, err, tc.wantCause, "%s: the transport cause stays reachable", tc.name)
				}
				if tc.wantText != "" {
					assert.Equal(t, tc.wantText, err.Error(), "%s: message", tc.name)
				}
			})
		})
	}
}

func TestCallJSONSendsRequestIDAndHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got http.Header
		h := serve(t, func(w http.ResponseWriter, r *http.Request) {
			got = r.Header.Clone()
			fooddelivery.WriteJSON(w, http.StatusCreated, map[string]string{"ok": "yes"})
		}, 0)
		ctx := fooddelivery.WithRequestID(t.Context(), "req-7")
		var out map[string]string
		status, err := fooddelivery.CallJSON(ctx, h.hc, "dep", http.MethodPost, "http://dep/x",
			http.Header{fooddelivery.HeaderUser: {"alice"}}, map[string]int{"n": 1}, &out)
		require.NoError(t, err, "call")
		assert.Equal(t, http.StatusCreated, status, "status of a 2xx answer")
		assert.Equal(t, map[string]string{"ok": "yes"}, out, "decoded body")
		assert.Equal(t, "req-7", got.Get(fooddelivery.HeaderRequestID), "request id header")
		assert.Equal(t, "alice", got.Get(fooddelivery.HeaderUser), "extra header")
		assert.Equal(t, "application/json", got.Get("Content-Type"), "content type of a JSON body")
	})
}

// TestWriteDependencyErrorKeepsTheMeaning checks the round trip: a service
// that answers with WriteDependencyError gives its own caller an error of
// the same class as the one it got from its dependency, with a message of
// its own (or the refusing dependency's own words), never the error's
// text with its addresses and chain.
func TestWriteDependencyErrorKeepsTheMeaning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		transport := &url.Error{Op: "Post", URL: "http://payment/charges", Err: context.DeadlineExceeded}
		cases := []struct {
			name     string
			depErr   error
			want     error
			status   int
			code     string
			dontRetr bool
			msg      string
		}{
			{"payment timed out", fooddelivery.ClassifyTransportError("payment", transport),
				fooddelivery.ErrTimeout, 504, "payment_timeout", false, "payment did not answer in time"},
			{"payment unreachable", fooddelivery.ClassifyTransportError("payment", syscall.ECONNREFUSED),
				fooddelivery.ErrUnavailable, 502, "payment_unavailable", false, "payment is unavailable right now"},
			{"payment overloaded", fooddelivery.ReadError("payment", response(503, true, "")),
				fooddelivery.ErrOverloaded, 503, "payment_overloaded", true, "payment is overloaded; try again later"},
			{"payment 500", fooddelivery.ReadError("payment", response(500, false, `{"error":"internal","message":"panic: goroutine 7 at http://x"}`)),
				fooddelivery.ErrUnavailable, 502, "payment_unavailable", false, "payment is unavailable right now"},
			{"menu not found", fooddelivery.ReadError("menu", response(404, false, "")),
				fooddelivery.ErrNotFound, 404, "menu_not_found", false, "menu found nothing by that name"},
			{"menu not found, in its words", fooddelivery.ReadError("menu", response(404, false, `{"error":"not_found","message":"no restaurant \"x\""}`)),
				fooddelivery.ErrNotFound, 404, "menu_not_found", false, `no restaurant "x"`},
			{"payment rejected", fooddelivery.ReadError("payment", response(400, false, "")),
				fooddelivery.ErrRejected, 422, "payment_rejected", false, "payment refused the request"},
			{"payment rejected, in its words", fooddelivery.ReadError("payment", response(400, false, `{"error":"bad_request","message":"amount must be positive"}`)),
				fooddelivery.ErrRejected, 422, "payment_rejected", false, "amount must be positive"},
			{"a plain error", errors.New("boom at http://payment/charges"),
				fooddelivery.ErrUnavailable, 502, "payment_unavailable", false, "payment is unavailable right now"},
			{"payment call cancelled by the service itself", fooddelivery.ClassifyTransportError("payment", context.Canceled),
				fooddelivery.ErrUnavailable, 502, "payment_unavailable", false, "payment is unavailable right now"},
		}
		for _, tc := range cases {
			rec := httptest.NewRecorder()
			dep := strings.SplitN(tc.code, "_", 2)[0]
			req := httptest.NewRequest("POST", "/orders", nil)
			fooddelivery.WriteDependencyError(rec, req, dep, tc.depErr)
			resp := rec.Result()
			err := fooddelivery.ReadError("order", resp)
			assertOnly(t, err, tc.want, tc.name)
			var ce *fooddelivery.CallError
			require.True(t, errors.As(err, &ce), "%s: want a *CallError", tc.name)
			assert.Equal(t, tc.status, ce.Status, "%s: status", tc.name)
			assert.Equal(t, tc.code, ce.Code, "%s: code", tc.name)
			assert.Equal(t, tc.dontRetr, ce.DontRetry, "%s: don't-retry", tc.name)
			assert.Equal(t, tc.msg, ce.Message, "%s: the message is the service's own, not the error's text %q", tc.name, tc.depErr)
		}
	})
}

func TestUnsentKnowsOnlyCallsThatNeverReachedTheService(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	read := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fooddelivery.ErrForced, true},
		{fmt.Errorf("wrapped: %w", fooddelivery.ErrCircuitOpen), true},
		{fooddelivery.ErrBulkheadFull, true},
		{fooddelivery.ClassifyTransportError("payment", &url.Error{Op: "Post", URL: "http://payment/charges", Err: dial}), true},
		{fooddelivery.ClassifyTransportError("payment", &url.Error{Op: "Post", URL: "http://payment/charges", Err: read}), false},
		{fooddelivery.ClassifyTransportError("payment", io.EOF), false},
		{fooddelivery.ErrTimeout, false},
		{nil, false},
	} {
		if got := fooddelivery.Unsent(c.err); got != c.want {
			t.Errorf("Unsent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
