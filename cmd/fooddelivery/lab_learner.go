//go:build learner

package main

import (
	"fmt"
	"net/http"

	"github.com/gophereats/resilience/fooddelivery/memnet"
	learner "github.com/gophereats/resilience/labs/01-timeouts"
)

// This file is built only with -tags learner, so that a lab the learner has
// left half done (or not compiling) never breaks the default build:
//
//	go run -tags learner ./cmd/fooddelivery -lab learner -fault payment=hang

func init() {
	paymentLabs = append(paymentLabs, paymentLab{
		name:  "learner",
		about: fmt.Sprintf("your labs/01-timeouts NewPaymentClient, budget %v", paymentBudget),
		client: func(network *memnet.Network) *http.Client {
			return learner.NewPaymentClient(network, paymentBudget)
		},
	})
}
