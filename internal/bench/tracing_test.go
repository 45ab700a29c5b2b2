package bench

import (
	"context"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

const checkoutMutation = `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { id status } }`

// BenchmarkCheckoutTracing measures what tracing costs a checkout through
// the whole system on the in-memory network (gateway, auth, order,
// payment, with no injected latency, so the CPU is what limits it):
// tracing=off has no Tracer, tracing=on the one cmd/fooddelivery runs by
// default, every span kept in a Ring of the default 500 traces. Compare
// them with
//
//	go test -run '^$' -bench CheckoutTracing -count 5 -benchmem > tracing.out
//	go tool benchstat -col /tracing tracing.out
func BenchmarkCheckoutTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "tracing=off"
		var tracer *tracing.Tracer
		if on {
			name = "tracing=on"
			tracer = tracing.New(tracing.NewRing(tracing.DefaultTraces, tracing.DefaultSpansPerTrace))
		}
		b.Run(name, func(b *testing.B) {
			sys, err := system.Start(system.Config{Tracer: tracer, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer sys.Close()
			vars := map[string]any{"input": map[string]any{
				"restaurantId": system.SampleRestaurant,
				"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 1}},
				"card":         "tok_visa",
			}}
			n := parallel(b, func(_ int, pb *testing.PB) int {
				n := 0
				for pb.Next() {
					resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, checkoutMutation, vars)
					if err != nil || resp.ErrorAt("placeOrder") != nil {
						b.Errorf("checkout %d failed: %v %v", n, err, resp)
						return n
					}
					n++
				}
				return n
			})
			ran(b, "a checkout succeeded", n)
			if on && tracer.Ring().Len() == 0 {
				b.Fatal("tracing=on kept no trace")
			}
		})
	}
}
