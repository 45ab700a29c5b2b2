package retrybudgets_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	retrybudgets "github.com/gophereats/resilience/labs/04-retry-budgets"
)

// The rig (the system with your retry layers, start; a checkout through
// the gateway, tap) and the helpers of every step.
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step5_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

var pizza = labtest.PizzaOrder()

// placeOrder is the app's checkout mutation, sent to the gateway.
const placeOrder = `mutation Place($input: PlaceOrderInput!) { placeOrder(input: $input) { id status } }`

// placeOrderVars are its variables: the standard order (labtest.PizzaOrder).
var placeOrderVars = map[string]any{"input": labtest.PizzaOrderJSON(labtest.PizzaCard)}

// paymentDown makes every charge fail with HTTP 503, a plain error (no
// "don't retry"), as a payment provider that is down answers.
var paymentDown = faults.Fault{Status: http.StatusServiceUnavailable}

// start runs the whole system with the learner's retry layers, built
// around budget, and the given per-instance limits.
func start(t *testing.T, budget *retrybudgets.RetryBudget, limits map[string]int) *system.System {
	return labtest.StartSystem(t, system.Config{Limits: limits, Retries: retrybudgets.Layers(budget)})
}

// tap sends one checkout through the gateway, as the app does, and
// reports whether an order came back.
func tap(t *testing.T, sys *system.System) bool {
	resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrder, placeOrderVars)
	return err == nil && len(resp.Errors) == 0
}

// generous is a budget that never gets in the way of a single checkout.
func generous() *retrybudgets.RetryBudget { return retrybudgets.NewRetryBudget(0.1, 10, 100) }

// failing runs n calls, one every `every`, through a BudgetedRetry built
// around budget, each failing with a retryable error, and returns how many
// calls reached the dependency.
func failing(budget *retrybudgets.RetryBudget, n int, every time.Duration) int64 {
	r := &retrybudgets.BudgetedRetry{Budget: budget}
	down := &fooddelivery.CallError{Service: "payment", Status: 503, Err: fooddelivery.ErrUnavailable}
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r.Do(context.Background(), fmt.Sprint("call-", i), func(context.Context, int) error {
				calls.Add(1)
				return down
			})
		})
		time.Sleep(every)
	}
	wg.Wait()
	return calls.Load()
}

// drain counts the retries budget allows right now (at most limit).
func drain(budget *retrybudgets.RetryBudget, limit int) int {
	n := 0
	for n < limit && budget.TryRetry() {
		n++
	}
	return n
}

// raceDetector reports whether the tests run with -race, which finds an
// unguarded field in a few calls where the plain run needs many.
func raceDetector() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
