package gameday

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// authWatch counts the requests the gateway let in although the auth
// service could not vouch for them: an inner wrapper, on the auth client
// itself, marks a check that failed for any reason but a refused token;
// an outer one, around whatever the plan put there (fallbacks, fail-open),
// sees the request let in anyway.
type authWatch struct {
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

type failedCheck struct{ failed bool }

type failedCheckKey struct{}

// watchAuth wraps cfg's gateway dependencies with an authWatch.
func watchAuth(cfg *system.Config) *authWatch {
	a := &authWatch{}
	plan := cfg.Fallbacks
	cfg.Fallbacks = func(d gateway.Deps) (gateway.Deps, func()) {
		d.Auth = innerAuth{d.Auth}
		var stop func()
		if plan != nil {
			d, stop = plan(d)
		}
		d.Auth = outerAuth{d.Auth, a}
		return d, stop
	}
	return a
}

func (a *authWatch) times() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Duration(nil), a.at...)
}

type innerAuth struct{ next fooddelivery.Authorizer }

func (i innerAuth) Authorize(ctx context.Context, token string) (string, error) {
	user, err := i.next.Authorize(ctx, token)
	if err != nil && !errors.Is(err, fooddelivery.ErrUnauthorized) {
		if f, ok := ctx.Value(failedCheckKey{}).(*failedCheck); ok {
			f.failed = true
		}
	}
	return user, err
}

type outerAuth struct {
	next  fooddelivery.Authorizer
	watch *authWatch
}

func (o outerAuth) Authorize(ctx context.Context, token string) (string, error) {
	f := &failedCheck{}
	user, err := o.next.Authorize(context.WithValue(ctx, failedCheckKey{}, f), token)
	if err == nil && f.failed {
		o.watch.mu.Lock()
		o.watch.at = append(o.watch.at, time.Since(o.watch.start))
		o.watch.mu.Unlock()
	}
	return user, err
}
