package retries_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/contention"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	retries "github.com/gophereats/resilience/labs/03-retries"
)

// Brooker's contention experiment ("Exponential Backoff And Jitter", AWS
// Architecture Blog, 2015) in the food-delivery domain: at the dinner rush,
// courier apps try to claim the same dispatch-board row with optimistic
// concurrency (read the row's version, write if unchanged, else back off
// and start over). The model is package contention; your Backoff is its
// full-jitter strategy. The experiment drives that function alone, not your
// Transport: the table's title says so.
const (
	expClients = 100 // courier apps claiming one row
	expRuns    = 10  // seeds averaged per strategy
)

// experimentClients lets you try other crowd sizes:
//
//	go test -v -run Experiment ./labs/03-retries/ -args -clients=20
//
// The pass/fail bands only apply to the default 100.
var experimentClients = flag.Int("clients", expClients, "lab 03 experiment: courier apps competing for one dispatch-board row")

// fullJitter is your Backoff with the model's base and cap.
func fullJitter(attempt int, _ time.Duration, r float64) time.Duration {
	return retries.Backoff(attempt, contention.Base, contention.Cap, r)
}

func TestStep6Experiment(t *testing.T) {
	var rows []contention.Row
	labtest.Run(t, labtest.Options{Step: 6}, func(t *testing.T) {
		rows = contention.Compare(*experimentClients, expRuns, fullJitter)
	})
	t.Logf("step 6: your Backoff alone, in an in-process model (not your Transport): %d courier apps claim one dispatch-board row; "+
		"hop abs(Normal(%v, %v)), base %v, cap %v; mean of %d seeds",
		*experimentClients, contention.HopMean, contention.HopSD, contention.Base, contention.Cap, expRuns)
	// The reference column is a port of Brooker's simulator run with 100
	// clients: beside another crowd size it would compare unlike things.
	withPort := *experimentClients == expClients
	if withPort {
		t.Logf("%-20s %12s %12s   %s", "strategy", "write calls", "completion", "(a port of Brooker's simulator, 100 clients, 100 seeds)")
	} else {
		t.Logf("%-20s %12s %12s   (no reference: it is for %d clients)", "strategy", "write calls", "completion", expClients)
	}
	for _, r := range rows {
		port := "-"
		if r.Port.Completion > 0 {
			port = r.Port.Completion.Round(100 * time.Millisecond).String()
		}
		name := r.Name
		if name == "full jitter" {
			name = "full jitter (yours)"
		}
		measured := fmt.Sprintf("%-20s %12.0f %12v", name, r.Measured.Calls, r.Measured.Completion.Round(10*time.Millisecond))
		if withPort {
			t.Logf("%s   (%.0f calls, %s)", measured, r.Port.Calls, port)
		} else {
			t.Logf("%s", measured)
		}
	}
	if *experimentClients != expClients {
		t.Skipf("step 6: the bands are for %d clients; with -clients=%d the table is for you to read", expClients, *experimentClients)
	}

	get := func(name string) contention.Result {
		r, _ := contention.Find(rows, name)
		return r.Measured
	}
	exp, full, equal, decorr := get("exponential"), get("full jitter"), get("equal jitter"), get("decorrelated jitter")
	if full.Calls > exp.Calls/2 {
		t.Errorf("step 6: with your Backoff the courier apps made %.0f write calls, against %.0f with plain exponential "+
			"backoff; full jitter should need at most half (Brooker: \"more than half\" fewer). Finish step 3 first.",
			full.Calls, exp.Calls)
	}
	if exp.Completion < 3*full.Completion {
		t.Errorf("step 6: plain exponential backoff finished in %v and your Backoff in %v; full jitter should finish several "+
			"times sooner (want at least 3x)", exp.Completion.Round(time.Millisecond), full.Completion.Round(time.Millisecond))
	}
	if decorr.Calls <= full.Calls {
		t.Errorf("step 6: decorrelated jitter made %.0f write calls and your Backoff %.0f; in Brooker's comparison full "+
			"jitter needs fewer calls than decorrelated", decorr.Calls, full.Calls)
	}
	if d := (equal.Calls - full.Calls) / full.Calls; d > 0.10 || d < -0.10 {
		t.Errorf("step 6: equal jitter made %.0f write calls and your Backoff %.0f, %.0f%% apart; the two should be within 10%%",
			equal.Calls, full.Calls, 100*d)
	}
}
