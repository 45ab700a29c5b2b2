package bench

import (
	"testing"

	retrybudgets "github.com/gophereats/resilience/solutions/04-retry-budgets"
)

// The retry budget's two hot paths: Request, on every first attempt, and
// TryRetry, on every retry while the budget has tokens. The budget is the
// running system's (cmd/fooddelivery: 0.1 retries per request, 1 a second,
// at most 2 saved); for TryRetry it holds so many tokens that it never
// runs out.
const (
	budgetRatio        = 0.1
	budgetMinPerSecond = 1
	budgetMax          = 2
	plentyOfTokens     = 1e11 // more retries than any benchmark makes
)

// budget is what the two budgets have in common.
type budget interface {
	Request()
	TryRetry() bool
	Tokens() float64
}

func BenchmarkRetryBudgetRequest(b *testing.B) {
	pair(b, "grpc-style-bucket", benchRequest("token bucket", func() budget { return NewTokenBucket(budgetRatio, budgetMax) }),
		benchRequest("reference budget", func() budget {
			return retrybudgets.NewRetryBudget(budgetRatio, budgetMinPerSecond, budgetMax)
		}))
}

func BenchmarkRetryBudgetRequestParallel(b *testing.B) {
	pair(b, "grpc-style-bucket", benchRequestParallel("token bucket", func() budget { return NewTokenBucket(budgetRatio, budgetMax) }),
		benchRequestParallel("reference budget", func() budget {
			return retrybudgets.NewRetryBudget(budgetRatio, budgetMinPerSecond, budgetMax)
		}))
}

func BenchmarkRetryBudgetTryRetry(b *testing.B) {
	pair(b, "grpc-style-bucket", benchTryRetry("token bucket", func() budget { return NewTokenBucket(budgetRatio, plentyOfTokens) }),
		benchTryRetry("reference budget", func() budget {
			return retrybudgets.NewRetryBudget(budgetRatio, budgetMinPerSecond, plentyOfTokens)
		}))
}

func BenchmarkRetryBudgetTryRetryParallel(b *testing.B) {
	pair(b, "grpc-style-bucket", benchTryRetryParallel("token bucket", func() budget { return NewTokenBucket(budgetRatio, plentyOfTokens) }),
		benchTryRetryParallel("reference budget", func() budget {
			return retrybudgets.NewRetryBudget(budgetRatio, budgetMinPerSecond, plentyOfTokens)
		}))
}

func benchRequest(name string, newBudget func() budget) func(b *testing.B) {
	return func(b *testing.B) {
		bu := spent(newBudget())
		b.ReportAllocs()
		for b.Loop() {
			bu.Request()
		}
		earned(b, name, bu, b.N)
	}
}

func benchRequestParallel(name string, newBudget func() budget) func(b *testing.B) {
	return func(b *testing.B) {
		bu := spent(newBudget())
		n := parallel(b, func(_ int, pb *testing.PB) int {
			n := 0
			for pb.Next() {
				bu.Request()
				n++
			}
			return n
		})
		ran(b, name+": Request ran", n)
		earned(b, name, bu, n)
	}
}

func benchTryRetry(name string, newBudget func() budget) func(b *testing.B) {
	return func(b *testing.B) {
		bu := newBudget()
		b.ReportAllocs()
		for b.Loop() {
			if !bu.TryRetry() {
				b.Fatalf("%s: TryRetry refused a retry with %g tokens to start with", name, plentyOfTokens)
			}
		}
		stillRetries(b, name, bu, "retries")
	}
}

func benchTryRetryParallel(name string, newBudget func() budget) func(b *testing.B) {
	return func(b *testing.B) {
		bu := newBudget()
		n := parallel(b, func(_ int, pb *testing.PB) int {
			n := 0
			for pb.Next() {
				if !bu.TryRetry() {
					b.Errorf("%s: TryRetry refused a retry with %g tokens to start with", name, plentyOfTokens)
					break
				}
				n++
			}
			return n
		})
		ran(b, name+": TryRetry allowed a retry", n)
		stillRetries(b, name, bu, "retries")
	}
}

// stillRetries fails unless the budget allows a retry after the b.N
// requests or retries the benchmark made.
func stillRetries(b *testing.B, name string, bu budget, what string) {
	b.Helper()
	if !bu.TryRetry() {
		b.Fatalf("%s: no retry allowed after %d %s, want a retry", name, b.N, what)
	}
}

// spent takes every whole token out of a new budget, so that what its
// Requests earn can be seen.
func spent(bu budget) budget {
	for i := 0; i <= budgetMax && bu.TryRetry(); i++ {
	}
	return bu
}

// earned fails unless n requests earned a spent budget at least their
// share of a retry each, up to its cap; then, since time earns the
// reference's budget tokens too, it spends the budget again and checks
// that ten more requests earn a whole retry within microseconds, far
// less than time's one a second could.
func earned(b *testing.B, name string, bu budget, n int) {
	b.Helper()
	want := min(budgetMax, budgetRatio*float64(n))
	if got := bu.Tokens(); got < want*(1-1e-9) {
		b.Fatalf("%s: %d requests left a spent budget %g tokens, want at least %g", name, n, got, want)
	}
	spent(bu)
	before := bu.Tokens()
	for range 10 {
		bu.Request()
	}
	if got := bu.Tokens() - before; got < 1-1e-9 {
		b.Fatalf("%s: 10 requests earned a spent budget %g tokens, want at least 1 (10 x %g)", name, got, budgetRatio)
	}
}
