package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
	timeouts "github.com/gophereats/resilience/solutions/01-timeouts"
)

// paymentBudget bounds a whole payment call for the -lab choices that have
// a timeout: the budget lab 01's tests give the order service.
const paymentBudget = 2 * time.Second

// paymentLab is one choice of the -lab flag: the http.Client the order
// service charges cards with (system.Config.PaymentClient).
type paymentLab struct {
	name   string
	about  string // one line for the banner
	client func(network *memnet.Network) *http.Client
}

// paymentLabs are the -lab choices. A build with -tags learner adds
// "learner" (lab_learner.go); without the tag, a learner's unfinished lab
// never takes part in the build.
var paymentLabs = []paymentLab{
	{
		name:   "naive",
		about:  "no timeout: a hung payment holds the checkout",
		client: system.NaivePaymentClient,
	},
	{
		name:  "solution",
		about: fmt.Sprintf("solutions/01-timeouts, whole call bounded by %v", paymentBudget),
		client: func(network *memnet.Network) *http.Client {
			return timeouts.NewPaymentClient(network, paymentBudget)
		},
	},
}

// findLab returns the -lab choice called name, or a *usageError.
func findLab(name string) (paymentLab, error) {
	var names []string
	for _, l := range paymentLabs {
		if l.name == name {
			return l, nil
		}
		names = append(names, l.name)
	}
	if name == "learner" {
		return paymentLab{}, usagef("-lab learner uses your labs/01-timeouts code, which is only built with a build tag: " +
			"go run -tags learner ./cmd/fooddelivery -lab learner")
	}
	return paymentLab{}, usagef("-lab %q: choose one of %s", name, strings.Join(names, ", "))
}
