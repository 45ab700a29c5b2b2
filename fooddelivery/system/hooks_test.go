package system_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/dispatch"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// placeSample places one pizza order through the gateway as alice and
// returns the order's id.
func placeSample(t *testing.T, sys *system.System) string {
	t.Helper()
	resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrderMutation,
		map[string]any{"in": sampleOrder(map[string]any{"dishId": system.SampleDish, "quantity": 1})})
	require.NoError(t, err)
	require.Empty(t, resp.Errors)
	var id string
	require.NoError(t, json.Unmarshal(jsonField(t, resp.Data, "placeOrder", "id"), &id))
	return id
}

func TestMetricsGivenInConfigAreTheSystems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		sys, err := system.Start(system.Config{Metrics: m})
		require.NoError(t, err)
		defer sys.Close()
		assert.Same(t, m, sys.Metrics)
		placeSample(t, sys)
		assert.Positive(t, m.Route("order", "POST /orders").Received.Load(), "the system counts into the registry it was given")
	})
}

// countingOrders counts the gateway's calls to the order service.
type countingOrders struct {
	fooddelivery.OrderService
	mu     sync.Mutex
	placed int
}

func (c *countingOrders) PlaceOrder(ctx context.Context, user string, in fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	c.mu.Lock()
	c.placed++
	c.mu.Unlock()
	return c.OrderService.PlaceOrder(ctx, user, in)
}

func TestGatewayOrderClientWrapsTheGatewaysOrderCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wrapped *countingOrders
		sys, err := system.Start(system.Config{GatewayOrderClient: func(c *order.Client) fooddelivery.OrderService {
			wrapped = &countingOrders{OrderService: c}
			return wrapped
		}})
		require.NoError(t, err)
		defer sys.Close()
		require.NotNil(t, wrapped, "the hook is asked once at start")
		placeSample(t, sys)
		assert.Equal(t, 1, wrapped.placed, "placeOrder goes through the wrapped client")
	})
}

func TestOrderDeadlinesGatewayCarriesTheGatewaysBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		sys, err := system.Start(system.Config{
			OrderDeadlines: &system.OrderDeadlines{Gateway: func(base http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					r = r.Clone(r.Context())
					r.Header.Set(fooddelivery.HeaderTimeoutMs, "1234")
					return base.RoundTrip(r)
				})
			}},
			Observe: func(instance, route string, r *http.Request) {
				if instance == "order" {
					mu.Lock()
					seen = append(seen, r.Header.Get(fooddelivery.HeaderTimeoutMs))
					mu.Unlock()
				}
			},
		})
		require.NoError(t, err)
		defer sys.Close()
		placeSample(t, sys)
		assert.Equal(t, []string{"1234"}, seen, "the gateway's order client runs through OrderDeadlines.Gateway")
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCourierDispatchSendsACourierPerPlacedOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		crashed := false
		sys, err := system.Start(system.Config{CourierDispatch: &system.CourierDispatch{
			Consumer: dispatch.NaiveAssignCourier,
			Queue: &dispatch.Queue{VisibilityTimeout: time.Second, CrashAfterHandling: func(dispatch.Message) bool {
				first := !crashed
				crashed = true
				return first
			}},
		}})
		require.NoError(t, err)
		defer sys.Close()
		require.NotNil(t, sys.Dispatch)

		id := placeSample(t, sys)
		synctest.Wait()
		require.Len(t, sys.Dispatch.Fleet.Couriers(id), 1, "the placed order was announced and a courier sent")
		time.Sleep(time.Second) // the crashed delivery becomes visible again
		synctest.Wait()
		assert.Len(t, sys.Dispatch.Fleet.Couriers(id), 2,
			"the naive consumer sends the freest courier again on redelivery: the pipeline delivers at least once")
		assert.Equal(t, 2, sys.Dispatch.Queue.Received())
	})
}

func TestNoCourierDispatchByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{})
		require.NoError(t, err)
		defer sys.Close()
		assert.Nil(t, sys.Dispatch)
	})
}

func TestChargeAttemptsCountOnceWithRetriesAndAKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{
			Retries:   retry.Layers{PaymentClient: retry.Policy{Attempts: 3}},
			ChargeKey: func(a payment.ChargeAttempt) string { return "order-" + a.Request.OrderID },
		})
		require.NoError(t, err)
		defer sys.Close()
		placeSample(t, sys)
		assert.Equal(t, int64(1), sys.Metrics.Edge("order", "payment").Attempts.Load(), "one charge sent, one attempt counted")
	})
}
