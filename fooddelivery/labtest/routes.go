package labtest

import (
	"strconv"
	"strings"

	"github.com/gophereats/resilience/fooddelivery/system"
)

// The routes lab tests count requests on, as the services register them
// in metrics.Metrics.
const (
	// ChargesRoute is payment's route for a charge: one request per
	// charge attempt, retries included.
	ChargesRoute = "POST /charges"
	// OrdersRoute is the order service's route for placing an order.
	OrdersRoute = "POST /orders"
	// MenuRoute is a menu replica's route for a restaurant's menu.
	MenuRoute = "GET /restaurants/{id}/menu"
)

// Received returns how many requests reached route of service so far,
// those the service rejected included (metrics.RouteStats.Received),
// as a count of requests. For service "menu" it is the sum over the menu
// replicas ("menu-1", "menu-2", ...); any other service is one instance
// name ("payment", "order", "menu-2").
func Received(sys *system.System, service, route string) int64 {
	if service != "menu" {
		return sys.Metrics.Route(service, route).Received.Load()
	}
	var n int64
	for _, key := range sys.Metrics.Routes() {
		instance, r, _ := strings.Cut(key, " ")
		if r == route && isMenuReplica(instance) {
			n += sys.Metrics.Route(instance, route).Received.Load()
		}
	}
	return n
}

// isMenuReplica reports whether instance is named like a menu replica
// ("menu-1").
func isMenuReplica(instance string) bool {
	num, ok := strings.CutPrefix(instance, "menu-")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(num)
	return err == nil
}

// Charges returns how many charge requests (ChargesRoute) reached the
// payment service: one per attempt, so a retried charge counts each try.
func Charges(sys *system.System) int64 { return Received(sys, "payment", ChargesRoute) }

// OrderCalls returns how many place-order requests (OrdersRoute) reached
// the order service.
func OrderCalls(sys *system.System) int64 { return Received(sys, "order", OrdersRoute) }

// MenuCalls returns how many menu requests (MenuRoute) reached the menu
// replicas, summed over every replica.
func MenuCalls(sys *system.System) int64 { return Received(sys, "menu", MenuRoute) }
