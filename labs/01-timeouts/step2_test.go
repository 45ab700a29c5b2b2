package timeouts_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
)

func TestStep2BlackHoledPaymentFailsAtConnect(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const connectBound = time.Second            // the connect must end before this...
		const connectFloor = 100 * time.Millisecond // ...but not absurdly early
		sys := start(t, 2, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "", faults.Fault{Connect: memnet.BlackHoled}))

		// The caller of the order service gives up after a minute at most.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		began := time.Now()
		_, err := sys.Orders().PlaceOrder(ctx, "alice", pizza)
		took := time.Since(began)

		require.Error(t, err, "step 2: payment's host is unreachable, yet PlaceOrder succeeded")
		if took < connectFloor {
			t.Fatalf("step 2: the connect to payment's black-holed host gave up after only %v. A connect timeout that short "+
				"would also cut off healthy connects on a real network (a handshake across a busy data centre, a full "+
				"accept queue): choose a few hundred milliseconds (check the unit: memnet.Dialer.Timeout is a time.Duration).", took)
		}
		if took >= connectBound {
			t.Fatalf("step 2: payment's host was black-holed (connects never complete); PlaceOrder took %v and failed with %q.\n"+
				"A healthy server accepts a connection almost at once: a connect timeout of a few hundred milliseconds "+
				"must end this well before the %v request budget, within %v.", took, err, budget, connectBound)
		}
		assert.ErrorIs(t, err, fooddelivery.ErrTimeout, "step 2: a connect that timed out is a timeout")
	})
}
