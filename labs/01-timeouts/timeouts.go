// Package timeouts is lab 01 of the workshop: the order service calls the
// payment service with an http.Client that has no timeout at all, so one
// hanging payment provider stops every checkout. Read README.md, then make
// `go test ./labs/01-timeouts/` pass by editing this file only.
package timeouts

import (
	"errors"
	"net/http"
	"time"

	"github.com/gophereats/resilience/fooddelivery/memnet"
)

// NewPaymentClient returns the http.Client the order service uses to charge
// cards through the payment service. network is the system's network:
// dial it with a memnet.Dialer, which has the same Timeout field and
// DialContext method as net.Dialer. timeout is the longest a whole payment
// call may take (the order service's budget for it, 2s in most tests).
func NewPaymentClient(network *memnet.Network, timeout time.Duration) *http.Client {
	dialer := &memnet.Dialer{Network: network}
	// TODO(step 2): a connect to a healthy server succeeds almost at once;
	// bound how long a connect may take.
	transport := &http.Transport{DialContext: dialer.DialContext}
	// TODO(step 1 and step 4): bound the whole call, reading the body
	// included, by timeout.
	return &http.Client{Transport: transport}
}

// TimeoutFromLatencies returns the request timeout that a caller should use
// for a dependency whose measured latencies are samples, when it accepts
// that a fraction falseTimeoutRate of ordinary requests (0.001 for 0.1%)
// will time out although they would have succeeded.
//
// It returns an error when samples is empty, a sample is negative, or
// falseTimeoutRate is not strictly between 0 and 1 (NaN included).
func TimeoutFromLatencies(samples []time.Duration, falseTimeoutRate float64) (time.Duration, error) {
	// TODO(step 3): the timeout is the latency that only falseTimeoutRate
	// of the samples exceed.
	return 0, errors.New("TimeoutFromLatencies is not written yet")
}
