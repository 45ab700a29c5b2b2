package timeouts_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
)

func TestStep4SlowBodyIsCutOff(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Stuck: "PlaceOrder was still reading a trickling payment response"}, func(t *testing.T) {
		const trickle = time.Minute
		sys := start(t, 4, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{SlowBody: trickle}))

		began := time.Now()
		_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		took := time.Since(began)
		if took <= budget+slack && err != nil && !errors.Is(err, fooddelivery.ErrTimeout) {
			t.Fatalf("step 4: payment sent its headers at once, then trickled the body over %v; PlaceOrder failed after %v "+
				"with %q, which is not a timeout. Is a context cancelled before the body is read (a deferred cancel() "+
				"inside RoundTrip)?", trickle, took, err)
		}
		if took > budget+slack || !errors.Is(err, fooddelivery.ErrTimeout) {
			outcome := "and succeeded"
			if err != nil {
				outcome = fmt.Sprintf("and failed with %q", err)
			}
			t.Fatalf("step 4: payment sent its headers at once, then trickled the body over %v; PlaceOrder took %v %s.\n"+
				"A timeout that stops at the response headers does not cover the body: the whole call, reading the body "+
				"included, must end within the %v budget as a timeout.", trickle, took, outcome, budget)
		}
	})
}

func TestStep4TimelyBodyIsRead(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const trickle = time.Second
		sys := start(t, 4, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{SlowBody: trickle}))

		placed, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.NoError(t, err, "step 4: payment's body took %v to arrive, within the %v budget, yet the order failed. "+
			"Is a context cancelled before the body is read (a deferred cancel() inside RoundTrip)? "+
			"The timeout must cover the body, not cut it short.", trickle, budget)
		assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 4: the order is charged exactly once")
	})
}
