package plan

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestCheckRefusesWhatTheSystemCannotRun(t *testing.T) {
	base := Labs(false)
	if err := base.Check(); err != nil {
		t.Fatalf("the labs' own settings are refused: %v", err)
	}
	for _, c := range []struct {
		field string
		edit  func(p *Plan)
	}{
		{"Payment.Timeout", func(p *Plan) { p.Payment.Timeout = -time.Second }},
		{"Payment.Timeout", func(p *Plan) { p.Payment.Timeout = 2562047 * time.Hour }},
		{"Payment.Retries.Attempts", func(p *Plan) { p.Payment.Retries.Attempts = 11 }},
		{"Payment.Retries.BaseDelay/MaxDelay", func(p *Plan) { p.Payment.Retries.MaxDelay = 2 * time.Hour }},
		{"Payment.Retries.Budget.Ratio", func(p *Plan) { p.Payment.Retries.Budget = &RetryBudget{Ratio: math.NaN(), Max: 10} }},
		{"Payment.Retries.Budget.Ratio", func(p *Plan) { p.Payment.Retries.Budget = &RetryBudget{Ratio: 1e-17, Max: 10} }},
		{"Payment.Retries.Budget.MinPerSecond", func(p *Plan) { p.Payment.Retries.Budget = &RetryBudget{Ratio: 0.1, MinPerSecond: math.Inf(1), Max: 10} }},
		{"Payment.Retries.Budget.Max", func(p *Plan) { p.Payment.Retries.Budget = &RetryBudget{Ratio: 0.1, Max: math.Inf(1)} }},
		{"Payment.Retries.Budget.Max", func(p *Plan) { p.Payment.Retries.Budget = &RetryBudget{Ratio: 0.1, Max: math.NaN()} }},
		{"Payment.Breaker.FailureRate", func(p *Plan) { p.Payment.Breaker = &Breaker{Window: 20, FailureRate: math.NaN()} }},
		{"Payment.Breaker.Window", func(p *Plan) { p.Payment.Breaker = &Breaker{Window: 1 << 40} }},
		{"Payment.Breaker", func(p *Plan) { p.Payment.Breaker = &Breaker{Window: 20, HalfOpenCalls: 1 << 30} }},
		{"Deadlines.OwnBudget", func(p *Plan) { p.Deadlines = &Deadlines{OwnBudget: 1000 * time.Hour} }},
		{"Gateway.Limit", func(p *Plan) { p.Gateway.Limit = 1 << 30 }},
		{"Gateway.Compartments", func(p *Plan) { p.Gateway.Compartments = &Compartments{Menu: 1 << 30} }},
		{"Gateway.Hedge.Window", func(p *Plan) { p.Gateway.Hedge.Window = 1 << 40 }},
		{"Gateway.Hedge.Percentile", func(p *Plan) { p.Gateway.Hedge.Percentile = math.NaN() }},
		{"Gateway.Hedge.Ratio", func(p *Plan) { p.Gateway.Hedge.Ratio = 0 }},
		{"Gateway.Hedge.Ratio", func(p *Plan) { p.Gateway.Hedge.Ratio = math.Inf(1) }},
		{"Gateway.Hedge.Burst", func(p *Plan) { p.Gateway.Hedge.Burst = 1 << 40 }},
	} {
		p := Labs(false)
		c.edit(&p)
		err := p.Check()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("a plan with a bad %s: Check() = %v; want ErrInvalid naming %s", c.field, err, c.field)
		}
	}
}
