package auth_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/auth"
	"github.com/gophereats/resilience/fooddelivery/internal/servetest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

type harness struct {
	net     *memnet.Network
	metrics *metrics.Metrics
	client  *auth.Client
}

func start(t *testing.T, fault fooddelivery.Middleware) *harness {
	t.Helper()
	h := &harness{metrics: metrics.NewMetrics()}
	in := fooddelivery.NewInstance("auth", 10, h.metrics)
	in.Faults = fault
	n, hc := servetest.Serve(t, "auth", auth.New(auth.Deps{Instance: in, Tokens: auth.DefaultTokens()}))
	h.net = n
	h.client = auth.NewClient(hc, memnet.ServiceURL("auth"))
	return h
}

func TestKnownTokensNameTheirUser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		for token, want := range auth.DefaultTokens() {
			user, err := h.client.Authorize(t.Context(), token)
			require.NoError(t, err, "authorizing %s", token)
			assert.Equal(t, want, user, "user of %s", token)
		}
		assert.Equal(t, int64(3), h.metrics.Route("auth", "GET /authorize").Received.Load(), "auth checks received")
	})
}

func TestBadTokensAreUnauthorized(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, nil)
		for _, token := range []string{"", "tok-mallory", "tok-alice extra"} {
			user, err := h.client.Authorize(t.Context(), token)
			assert.ErrorIs(t, err, fooddelivery.ErrUnauthorized, "token %q must be refused", token)
			assert.Empty(t, user, "no user for token %q", token)
		}
	})
}

func TestAuthThatCannotBeReachedFailsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := func(_, _ string, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			})
		}
		h := start(t, hang)

		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		user, err := h.client.Authorize(ctx, "tok-alice")
		assert.ErrorIs(t, err, fooddelivery.ErrTimeout, "a hanging auth check is a timeout")
		assert.NotErrorIs(t, err, fooddelivery.ErrUnauthorized, "a check that could not be made is not a refusal")
		assert.Empty(t, user, "no user when the check could not be made")

		h.net.SetConnectFault("auth", memnet.Refused)
		user, err = h.client.Authorize(t.Context(), "tok-alice")
		assert.ErrorIs(t, err, fooddelivery.ErrUnavailable, "a refused connection means auth is unavailable")
		assert.Empty(t, user, "no user when auth is unreachable")
	})
}
