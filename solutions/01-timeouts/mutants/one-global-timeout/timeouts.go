// Mutant: one constant timeout for every dependency instead of the one derived for this dependency. Caught by step 3.

package timeouts

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/gophereats/resilience/fooddelivery/memnet"
)

// ConnectTimeout bounds how long a connect to the payment service may take.
// Inside a data centre a healthy server accepts in well under a millisecond,
// so a few hundred milliseconds only ever cuts off a host that is down or
// unreachable.
const ConnectTimeout = 300 * time.Millisecond

// GlobalTimeout is used for every dependency.
const GlobalTimeout = 2 * time.Second

// NewPaymentClient returns the http.Client the order service uses to charge
// cards through the payment service. network is the system's network;
// timeout bounds the whole call: connecting, sending, waiting for the
// response headers and reading the body. A timeout of zero or less panics:
// a missing timeout is exactly what this lab removes.
func NewPaymentClient(network *memnet.Network, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		panic(fmt.Sprintf("timeouts: payment client needs a positive timeout, got %v", timeout))
	}
	dialer := &memnet.Dialer{Network: network, Timeout: ConnectTimeout}
	return &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}, Timeout: GlobalTimeout}
}

// TimeoutFromLatencies returns the request timeout that a caller should use
// for a dependency whose measured latencies are samples, when it accepts
// that a fraction falseTimeoutRate of ordinary requests (0.001 for 0.1%)
// will time out although they would have succeeded.
//
// The result is the smallest sample that at most falseTimeoutRate *
// len(samples) samples exceed: the nearest-rank (1 - falseTimeoutRate)
// percentile. The AWS Builders' Library ("Timeouts, retries, and backoff
// with jitter") describes choosing the timeout this way.
//
// It returns an error when samples is empty, a sample is negative, or
// falseTimeoutRate is not strictly between 0 and 1 (NaN included).
// samples is not modified.
func TimeoutFromLatencies(samples []time.Duration, falseTimeoutRate float64) (time.Duration, error) {
	if len(samples) == 0 {
		return 0, errors.New("timeouts: no latency samples")
	}
	if !(falseTimeoutRate > 0 && falseTimeoutRate < 1) {
		return 0, fmt.Errorf("timeouts: false-timeout rate %v is not between 0 and 1", falseTimeoutRate)
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	if sorted[0] < 0 {
		return 0, fmt.Errorf("timeouts: negative latency sample %v", sorted[0])
	}
	// How many samples may lie above the timeout. The small epsilon keeps
	// a product such as 0.29*100 = 28.999999999999996 from rounding down
	// to 28.
	allowed := int(math.Floor(falseTimeoutRate*float64(len(sorted)) + 1e-9))
	allowed = min(allowed, len(sorted)-1) // a rate a hair below 1 still leaves one sample
	return sorted[len(sorted)-1-allowed], nil
}
