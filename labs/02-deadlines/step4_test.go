package deadlines_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
)

func TestStep4BadBudgetsAreNeverTrusted(t *testing.T) {
	cases := []struct{ name, value, note string }{
		{"not a number", "soon", ""},
		{"negative", "-1500", ""},
		{"an hour", "3600000", ""},
		{"beyond int64", "99999999999999999999", ""},
		{"int64 max, overflows as a duration", "9223372036854775807", ""},
		{"wraps to a tiny positive duration", "18446744073710",
			" Times time.Millisecond, these 14 digits wrap around to +448µs: checking the sign after the multiplication " +
				"is not enough. Reject more than 8 digits before converting."},
		{"with a plus sign", "+1500",
			" strconv.ParseInt accepts the sign; the wire format does not (digits only). Check every byte is a digit " +
				"before parsing."},
		{"twelve digits with leading zeros", "000000001500",
			" That is 12 digits, more than the 8 the wire allows, even though the number is small: count the " +
				"characters, not the value."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
				w := &wire{}
				sys := start(t, w)
				placed, err := placeWithHeader(context.Background(), sys, c.value)
				if err != nil {
					t.Fatalf("step 4: the caller sent %s: %q and the healthy checkout failed: %v.\n"+
						"A value you cannot trust is ignored (or clamped): the service falls back to its own %v budget "+
						"and works as usual. It must never crash or turn into an expired deadline.%s",
						fooddelivery.HeaderTimeoutMs, c.value, err, own, c.note)
				}
				assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 4: the order is charged exactly once")
				atPayment, ok := w.first("payment")
				require.True(t, ok, "step 4: the checkout succeeded without a payment call")
				if !atPayment.sent {
					t.Fatalf("step 4: the caller sent %s: %q; payment received no budget at all. The order service falls back "+
						"to its own %v and passes what is left of it on (finish step 1 first).", fooddelivery.HeaderTimeoutMs, c.value, own)
				}
				ms, err := strconv.ParseInt(atPayment.value, 10, 64)
				passed := time.Duration(ms) * time.Millisecond
				if err != nil || passed > own-hop || passed < own-hop-slack {
					t.Fatalf("step 4: the caller sent %s: %q; the order service passed %q on to payment. "+
						"It must fall back to its own %v budget (clamp or ignore the value, never let it extend anything), "+
						"and pass on %v less the hop allowance.%s", fooddelivery.HeaderTimeoutMs, c.value, atPayment.value, own, own, c.note)
				}

				require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))
				began := time.Now()
				_, err = placeWithHeader(context.Background(), sys, c.value)
				took := time.Since(began)
				if took > own+slack || !errors.Is(err, fooddelivery.ErrTimeout) {
					t.Fatalf("step 4: the caller sent %s: %q and payment hung; the order service answered after %v with %v. "+
						"No header value may stretch the order service past its own %v: answer 504 by then.",
						fooddelivery.HeaderTimeoutMs, c.value, took, err, own)
				}
			})
		})
	}
}

func TestStep4LongBudgetIsCappedOnTheWire(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const long, most = 30 * time.Hour, "99999999" // 8 digits of milliseconds: almost 28 hours
		w := &wire{}
		sys := start(t, w)
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		_, err := gateway(t, sys).PlaceOrder(ctx, "alice", pizza)
		if err != nil {
			t.Fatalf("step 4: the gateway gave a healthy checkout %v and it failed: %v", long, err)
		}
		atOrder, _ := w.first("order")
		if !atOrder.sent {
			t.Fatalf("step 4: the gateway's context had %v left; the order service received no %s header (finish step 1 first).",
				long, fooddelivery.HeaderTimeoutMs)
		}
		if atOrder.value != most {
			t.Fatalf("step 4: the gateway's context had %v (%d ms) left, less the %v hop; the order service received %s: %q.\n"+
				"The wire carries at most 8 digits, as gRPC's grpc-timeout does: a strict server (yours included) ignores a "+
				"longer value as malformed and works as if the caller had sent no budget at all. Your Transport must cap what it writes at %s.",
				long, long.Milliseconds(), hop, fooddelivery.HeaderTimeoutMs, atOrder.value, most)
		}
	})
}
