package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/auth"
)

type stubAuth struct{ err error }

func (s stubAuth) Authorize(context.Context, string) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	return "alice", nil
}

func TestNaiveFailOpenLetsEveryoneInWhenAuthIsDown(t *testing.T) {
	down := auth.NaiveFailOpen(stubAuth{&fooddelivery.CallError{Service: "auth", Status: 503, Err: fooddelivery.ErrUnavailable}})
	user, err := down.Authorize(context.Background(), "tok-mallory")
	require.NoError(t, err, "fail open: an outage is not a denial")
	assert.Equal(t, "mallory", user, "the token is trusted to name its user")
	user, err = down.Authorize(context.Background(), "whatever")
	require.NoError(t, err)
	assert.Equal(t, "guest", user)

	refused := auth.NaiveFailOpen(stubAuth{&fooddelivery.CallError{Service: "auth", Status: http.StatusUnauthorized, Err: fooddelivery.ErrUnauthorized}})
	_, err = refused.Authorize(context.Background(), "tok-mallory")
	assert.ErrorIs(t, err, fooddelivery.ErrUnauthorized, "a refused token is still refused")

	wrapped := auth.NaiveFailOpen(stubAuth{fmt.Errorf("token cache: %w", fooddelivery.ErrUnauthorized)})
	user, err = wrapped.Authorize(context.Background(), "tok-mallory")
	assert.ErrorIs(t, err, fooddelivery.ErrUnauthorized, "a refusal is recognised by its sentinel, whoever wrapped it; got user %q", user)

	user, err = auth.NaiveFailOpen(stubAuth{}).Authorize(context.Background(), "tok-alice")
	require.NoError(t, err)
	assert.Equal(t, "alice", user, "a healthy check passes its answer on")
}
