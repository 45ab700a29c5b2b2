package deadlines_test

import (
	"context"
	"errors"
	"fmt"
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
						"A value you cannot read is ignored, one above the budget is clamped: the service falls back to its own %v budget "+
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
				switch {
				case err == nil && passed > own-hop && passed <= own:
					// The value was ignored as it must be; the hop was not taken off.
					t.Fatalf("step 4: the caller sent %s: %q; the order service worked within its own %v, as it must, but "+
						"passed %q on to payment: %v, more than its own %v less the %v hop allowance (%v). Your Transport "+
						"must write what is left of the context's deadline LESS the hop (step 1), whatever the caller sent.",
						fooddelivery.HeaderTimeoutMs, c.value, own, atPayment.value, passed, own, hop, own-hop)
				case err != nil || passed > own-hop || passed < own-hop-slack:
					t.Fatalf("step 4: the caller sent %s: %q; the order service passed %q on to payment. "+
						"It must fall back to its own %v budget (a malformed value is ignored, one above it is clamped to it; neither may extend anything), "+
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

// TestStep4LeadingZerosAreDecimal checks that a well-formed value with
// leading zeros (at most 8 digits) is the decimal number it spells:
// "01500" is 1500ms, not 832ms (octal) and not malformed.
func TestStep4LeadingZerosAreDecimal(t *testing.T) {
	cases := []struct {
		value   string
		callers time.Duration
	}{
		{"01500", 1500 * time.Millisecond},
		{"00000900", 900 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.value, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
				sys := start(t, nil)
				require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))

				began := time.Now()
				_, err := placeWithHeader(context.Background(), sys, c.value)
				took := time.Since(began)
				if took > c.callers+slack || took < c.callers-slack || !errors.Is(err, fooddelivery.ErrTimeout) {
					why := ""
					if octal, perr := strconv.ParseInt(c.value, 8, 64); perr == nil && (took-time.Duration(octal)*time.Millisecond).Abs() <= slack {
						why = fmt.Sprintf(" %v is %q read as octal (%d): a leading zero must not change the base "+
							"(strconv.ParseInt(v, 10, 64), not base 0).", took.Round(time.Millisecond), c.value, octal)
					} else if (took - own).Abs() <= slack {
						why = fmt.Sprintf(" %v is the order service's own budget: the value was treated as malformed, but "+
							"%q is %d digits, all decimal, so it is well formed.", own, c.value, len(c.value))
					}
					t.Fatalf("step 4: the caller sent %s: %q and payment hung; the order service answered after %v with %v. "+
						"Leading zeros are allowed (within 8 digits) and the number is decimal: %q is %v, so it must answer "+
						"504 (a timeout) after %v.%s", fooddelivery.HeaderTimeoutMs, c.value, took, err, c.value, c.callers, c.callers, why)
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
