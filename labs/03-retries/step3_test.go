package retries_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	retries "github.com/gophereats/resilience/labs/03-retries"
)

func TestStep3BackoffFullJitter(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		attempt   int
		base, cap time.Duration
		r         float64
		want      time.Duration
	}{
		{1, 100 * ms, 2 * time.Second, 0, 0},
		{1, 100 * ms, 2 * time.Second, 0.5, 100 * ms},  // ceiling 200ms
		{2, 100 * ms, 2 * time.Second, 0.25, 100 * ms}, // ceiling 400ms
		{3, 100 * ms, 2 * time.Second, 0.75, 600 * ms}, // ceiling 800ms
		{4, 100 * ms, 2 * time.Second, 0.5, 800 * ms},  // ceiling 1.6s
		{5, 100 * ms, 2 * time.Second, 0.5, time.Second},
		{0, 100 * ms, 2 * time.Second, 0.5, 50 * ms},
		{6, 5 * ms, 2 * time.Second, 0.1, 32 * ms},
		{9, 5 * ms, 2 * time.Second, 0.9, 1800 * ms},
	}
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		for _, c := range cases {
			got := retries.Backoff(c.attempt, c.base, c.cap, c.r)
			if d := got - c.want; d < -time.Microsecond || d > time.Microsecond {
				ceiling := min(c.cap, c.base<<c.attempt)
				t.Errorf("step 3: Backoff(attempt %d, base %v, cap %v, r %v) = %v, want %v: full jitter is r x min(cap, base x 2^attempt) = %v x %v",
					c.attempt, c.base, c.cap, c.r, got, c.want, c.r, ceiling)
			}
		}
		if a, b := retries.Backoff(3, 100*ms, 2*time.Second, 0.1), retries.Backoff(3, 100*ms, 2*time.Second, 0.9); a == b {
			t.Errorf("step 3: Backoff gives %v whether r is 0.1 or 0.9: without jitter, clients that failed together retry together", a)
		}
	})
}

func TestStep3BackoffNeverOverflows(t *testing.T) {
	cases := []struct {
		attempt   int
		base, cap time.Duration
	}{
		{31, 100 * time.Millisecond, 2 * time.Second},
		{40, 100 * time.Millisecond, 2 * time.Second},
		{62, 100 * time.Millisecond, 2 * time.Second},
		{63, 100 * time.Millisecond, 2 * time.Second},
		{64, 100 * time.Millisecond, 2 * time.Second},
		{100, 100 * time.Millisecond, 2 * time.Second},
		{math.MaxInt, 100 * time.Millisecond, 2 * time.Second},
		{40, time.Hour, 24 * time.Hour},
		{63, time.Nanosecond, time.Minute},
	}
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		for _, c := range cases {
			got := retries.Backoff(c.attempt, c.base, c.cap, 0.5)
			if want := c.cap / 2; got < want-time.Microsecond || got > want+time.Microsecond {
				t.Errorf("step 3: Backoff(attempt %d, base %v, cap %v, r 0.5) = %v, want %v (half the cap). "+
					"For large attempts base x 2^attempt does not fit in an int64 of nanoseconds (from attempt 37 with a 100ms "+
					"base) and base << attempt is 0 from 64 on: compare with the cap before multiplying.",
					c.attempt, c.base, c.cap, got, want)
			}
		}
	})
}

func TestStep3AtMostNAttempts(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "the read of the charges was still retrying"}, func(t *testing.T) {
		const attempts = 4
		base, ceiling := 100*time.Millisecond, time.Second
		r := newRig(t, options{configure: func(tr *retries.Transport) {
			tr.Attempts, tr.BaseDelay, tr.MaxDelay = attempts, base, ceiling
		}})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		_, err := r.payments.Charges(context.Background(), "")
		require.ErrorIs(t, err, fooddelivery.ErrUnavailable, "step 3: payment answered 503 every time; the caller must learn that it was unavailable")
		if r.spy.Count() != attempts {
			t.Fatalf("step 3: payment answered 503 every time; with Attempts = %d your Transport made %d attempts. "+
				"Attempts counts every attempt, the first included. The attempts: %s.", attempts, r.spy.Count(), r.spy.Timeline())
		}
		if ce := callError(err); ce == nil || ce.Message == "" {
			t.Fatalf("step 3: after %d attempts your Transport returned payment's last 503, but its body had already been "+
				"read: the caller got no explanation (error: %v). The answer you return is the caller's to read and "+
				"close: drain only the answers you throw away.", attempts, err)
		}
		gaps := r.spy.Gaps()
		var total time.Duration
		for i, g := range gaps {
			total += g
			if limit := retries.Backoff(i+1, base, ceiling, 1); g > limit+tolerance {
				t.Errorf("step 3: your Transport waited %v before retry %d; full jitter waits at most min(cap, base x 2^%d) = %v. "+
					"The attempts: %s.", g, i+1, i+1, limit, r.spy.Timeline())
			}
		}
		if total == 0 {
			t.Errorf("step 3: your Transport retried at once (waits %v). While payment is failing over, an immediate "+
				"retry arrives while it is still down, and a thousand clients retrying at once are a thousand-fold "+
				"load: wait Backoff(attempt, ...) between attempts.", gaps)
		}
	})
}

// TestStep3DocumentedDefaults checks the defaults the README documents (3
// attempts, a 100ms base, a 2s cap) by what a Transport with zero fields
// does, with the figures written here, never read from DefaultAttempts,
// DefaultBaseDelay and DefaultMaxDelay: a test that reads the constants it
// checks passes whatever they say.
func TestStep3DocumentedDefaults(t *testing.T) {
	const (
		attempts = 3                      // documented: 3 attempts in all
		base     = 100 * time.Millisecond // documented: backoff base 100ms
		maxDelay = 2 * time.Second        // documented: capped at 2s
	)
	// want is the full-jitter wait before retry k of the rig's first
	// request, with the documented base and cap and the draw the README
	// prescribes (t.draw(1, k): Seed 0, the Transport's first request).
	want := func(k int) (wait, ceiling time.Duration, r float64) {
		ceiling = maxDelay
		if k < 63 && base <= maxDelay>>k {
			ceiling = base << k
		}
		r = fooddelivery.Draw(0, "request-1", k)
		return time.Duration(r * float64(ceiling)), ceiling, r
	}
	check := func(t *testing.T, r *rig, what string, wantAttempts int) {
		t.Helper()
		_, err := r.payments.Charges(context.Background(), "")
		if n := r.spy.Count(); n != wantAttempts {
			t.Fatalf("step 3: payment answered 503 every time; %s made %d attempts (error: %v), want %d. "+
				"The zero Transport's defaults are documented: %d attempts in all, a %v base, a %v cap. The attempts: %s.",
				what, n, err, wantAttempts, attempts, base, maxDelay, r.spy.Timeline())
		}
		for i, g := range r.spy.Gaps() {
			k := i + 1
			wait, ceiling, draw := want(k)
			if g > ceiling+tolerance {
				t.Errorf("step 3: %s waited %v before retry %d, more than the documented ceiling min(%v, %v x 2^%d) = %v: "+
					"are the default delays the documented %v base and %v cap?", what, g, k, maxDelay, base, k, ceiling, base, maxDelay)
			} else if g < wait-tolerance || g > wait+tolerance {
				t.Errorf("step 3: %s waited %v before retry %d; with the documented %v base and %v cap, full jitter waits "+
					"r x min(cap, base x 2^%d) = %.4f x %v = %v, where r = t.draw(1, %d) = %.4f is this request's draw. "+
					"Are the default delays the documented ones, and is the wait Backoff(attempt, base, cap, t.draw(n, attempt))? "+
					"The attempts: %s.", what, g, k, base, maxDelay, k, draw, ceiling, wait, k, draw, r.spy.Timeline())
			}
		}
	}
	t.Run("a zero Transport", func(t *testing.T) {
		labtest.Run(t, labtest.Options{Step: 3, Stuck: "the read of the charges was still retrying"}, func(t *testing.T) {
			r := newRig(t, options{})
			require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))
			check(t, r, "a Transport with every field zero", attempts)
		})
	})
	t.Run("8 attempts, zero delays", func(t *testing.T) {
		labtest.Run(t, labtest.Options{Step: 3, Stuck: "the read of the charges was still retrying"}, func(t *testing.T) {
			const many = 8 // enough retries for the ceiling to reach the cap (from retry 5 on)
			r := newRig(t, options{configure: func(tr *retries.Transport) { tr.Attempts = many }})
			require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))
			check(t, r, "a Transport with Attempts = 8 and zero BaseDelay and MaxDelay", many)
		})
	})
}

func TestStep3RetriesAreSpreadOut(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const clients = 20
		r := newRig(t, options{configure: func(tr *retries.Transport) { tr.Attempts = 2 }})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		began := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() { r.payments.Charges(context.Background(), "") })
		}
		wg.Wait()

		instants := map[time.Time]bool{}
		for _, a := range r.spy.Attempts() {
			if a.Start.After(began) {
				instants[a.Start] = true
			}
		}
		if len(instants) == 0 {
			t.Fatalf("step 3: %d requests failed at the same moment and all %d retried at that very instant, "+
				"without waiting: a thundering herd. Wait Backoff(attempt, ...) before each retry.", clients, clients)
		}
		if len(instants) < clients*3/4 {
			t.Fatalf("step 3: %d requests failed at the same moment and their retries went out at %d distinct instants "+
				"(want at least %d): clients that fail together and wait the same time retry together, in waves. "+
				"Full jitter spreads them over the whole backoff interval.", clients, len(instants), clients*3/4)
		}
	})
}

func TestStep3WaitEndsOnCancel(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "the read of the charges was still waiting to retry after its caller left"}, func(t *testing.T) {
		r := newRig(t, options{configure: func(tr *retries.Transport) {
			tr.Attempts, tr.BaseDelay, tr.MaxDelay = 5, time.Minute, time.Minute
		}})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		ctx, cancel := context.WithCancel(context.Background())
		var cancelled time.Time
		stop := func() bool { return false }
		r.spy.After = func(n int) {
			if n == 1 { // the user closes the app one second into the wait
				timer := time.AfterFunc(time.Second, func() { cancelled = time.Now(); cancel() })
				stop = timer.Stop
			}
		}
		began := time.Now()
		_, err := r.payments.Charges(ctx, "")
		returned := time.Now()
		stop()
		cancel()

		all := r.spy.Attempts()
		early := 0 // attempts sent in the second between the first answer and the cancel
		for _, a := range all {
			if a.Start.Before(all[0].End.Add(time.Second)) {
				early++
			}
		}
		if early > 1 {
			how := "Did it use BaseDelay and MaxDelay (the defaults only when they are zero)?"
			if gaps := r.spy.Gaps(); gaps[0] == 0 {
				how = "It did not wait at all: wait Backoff(attempt, ...) between attempts."
			}
			t.Fatalf("step 3: payment answered 503 every time; with BaseDelay = MaxDelay = 1 minute the first wait is "+
				"r x 1 minute, yet your Transport sent %d attempts within the first second. %s", early, how)
		}
		if cancelled.IsZero() {
			t.Fatalf("step 3: payment answered 503 every time; with Attempts = 5 and waits of up to a minute, your Transport "+
				"gave up after %d attempts and %v (error: %v), before the caller cancelled one second into the first wait. "+
				"Did it wait between attempts at all?", r.spy.Count(), returned.Sub(began), err)
		}
		if late := returned.Sub(cancelled); late > tolerance {
			t.Fatalf("step 3: the caller cancelled during a wait between attempts, but your Transport returned %v later: "+
				"a sleep that does not watch the context keeps a goroutine (and the caller's slot) busy for nothing. "+
				"Wait with a select on ctx.Done() and a timer.", late)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("step 3: the caller cancelled one second into the wait after payment's 503; the read ended with %v, "+
				"want an error matching context.Canceled: the wait ended because the caller left, so return ctx.Err().", err)
		}
		for i, a := range all {
			if a.Start.After(cancelled) {
				t.Fatalf("step 3: your Transport sent attempt %d after the caller had cancelled", i+1)
			}
		}
	})
}

func TestStep3NoWaitPastTheDeadline(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const budget = time.Second
		r := newRig(t, options{configure: func(tr *retries.Transport) { tr.Attempts = 10 }})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		began := time.Now()
		_, err := r.payments.Charges(ctx, "")
		took := time.Since(began)

		if took >= budget || errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, fooddelivery.ErrUnavailable) {
			t.Fatalf("step 3: payment answered 503 every time and the caller's deadline was %v away; your Transport made "+
				"%d attempts and returned after %v with %q. A wait that would end after the deadline leads to no "+
				"useful attempt: give up at once and return payment's last answer, so the caller learns why it "+
				"failed and keeps the time it has left.", budget, r.spy.Count(), took, err)
		}
		if ce := callError(err); ce == nil || ce.Message == "" {
			t.Fatalf("step 3: your Transport gave up before the deadline and returned payment's 503, but its body had "+
				"already been read: the caller got no explanation (error: %v). Decide first whether to retry; drain only "+
				"an answer you throw away, never the one you return.", err)
		}
	})
}

func TestStep3AttemptsAreCountedBelowYourTransport(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		r := newRig(t, options{})
		_, err := r.payments.Charges(context.Background(), "") // opens a keep-alive connection
		require.NoError(t, err, "step 3: a read of the charges from a healthy payment service failed")
		warm, warmAttempts := r.received(listing), r.spy.Count()

		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Reset: true}))
		_, err = r.payments.Charges(context.Background(), "")
		require.Error(t, err, "step 3: payment reset every connection, yet the read succeeded")
		yours, arrived := r.spy.Count()-warmAttempts, r.received(listing)-warm
		if documented := 3; yours != documented {
			t.Fatalf("step 3: payment reset every connection; your Transport made %d attempts, want %d (a zero Transport "+
				"makes the documented 3 attempts in all)", yours, documented)
		}
		t.Logf("step 3: your Transport made %d attempts and payment received %d requests: net/http.Transport resent %d "+
			"on its own (see the README: a GET on a reused connection that dies before any answer is resent)",
			yours, arrived, arrived-int64(yours))
		if arrived < int64(yours) {
			t.Fatalf("step 3: payment received %d requests for %d attempts", arrived, yours)
		}
	})
}
