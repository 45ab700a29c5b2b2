package compose

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery/plan"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// TestAPlanAtCheckBoundsRuns builds and serves the system from a plan
// whose every setting is at the bound plan.Check allows: what Check
// accepts, the building blocks must take without a panic or running out
// of memory.
func TestAPlanAtCheckBoundsRuns(t *testing.T) {
	p := plan.Labs(false)
	p.Payment.Timeout = plan.MaxDuration
	p.Payment.Retries = plan.Retries{Attempts: 10, BaseDelay: plan.MaxDuration, MaxDelay: plan.MaxDuration,
		Budget: &plan.RetryBudget{Ratio: plan.MinRatio, MinPerSecond: plan.MaxTokens, Max: plan.MaxTokens}}
	p.Payment.Breaker = &plan.Breaker{Window: plan.MaxWindow, FailureRate: 1, MinCalls: plan.MaxWindow, OpenFor: plan.MaxDuration, HalfOpenCalls: plan.MaxWindow}
	p.Deadlines = &plan.Deadlines{OwnBudget: plan.MaxDuration, Need: plan.MaxDuration - 1, Hop: plan.MaxDuration - 1}
	p.Gateway.Compartments = &plan.Compartments{Orders: plan.MaxSlots, Menu: plan.MaxSlots, Courier: plan.MaxSlots, Wait: plan.MaxDuration}
	p.Gateway.Hedge = &plan.Hedge{Window: plan.MaxWindow, Percentile: 0.999, FirstDelay: plan.MaxDuration, Ratio: plan.MinRatio, Burst: plan.MaxTokens}
	if err := p.Check(); err != nil {
		t.Fatalf("the plan at the bounds is refused: %v", err)
	}
	synctest.Test(t, func(t *testing.T) {
		w := Wire(FromPlan(p, false), Settings{Seed: 1, Plan: p, Logger: slog.New(slog.DiscardHandler)})
		sys, err := system.Start(w.Cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer sys.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		resp, _, err := sys.GraphQL(ctx, "", `{ restaurants { id } }`, nil)
		if err != nil || len(resp.Errors) > 0 {
			t.Fatalf("a restaurant list on the plan at the bounds: %v %v", err, resp)
		}
	})
}
