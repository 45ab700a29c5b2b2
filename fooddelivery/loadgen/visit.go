package loadgen

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
)

// The actions a customer takes, as named in a Mix and in Stats.
const (
	// ActionRestaurants lists every restaurant (anonymous).
	ActionRestaurants = "restaurants"
	// ActionMenu reads one restaurant's menu and delivery estimate
	// (anonymous).
	ActionMenu = "menu"
	// ActionHome loads the home page: restaurants with menus and
	// estimates, plus recommendations (anonymous or signed in, half each).
	ActionHome = "home"
	// ActionCheckout places and pays for an order of one to three dishes
	// of one restaurant with the card tok_visa (signed in).
	ActionCheckout = "checkout"
	// ActionReview submits a review of a restaurant (signed in).
	ActionReview = "review"
	// ActionOrder looks up one of the orders the Generator's customers
	// placed, as its owner. While none has been placed it is not sent
	// and counts as Skipped.
	ActionOrder = "order"
)

// Actions lists every action, in the order Stats and Choose use.
func Actions() []string {
	return []string{ActionRestaurants, ActionMenu, ActionHome, ActionCheckout, ActionReview, ActionOrder}
}

// Mix weighs the actions: the share of customers taking an action is its
// weight over the sum of the weights ({"checkout": 3, "menu": 1} sends 75%
// checkouts). Missing actions weigh 0. In JSON it is an object of
// integers.
type Mix map[string]int

// MaxWeight is the largest weight Validate accepts.
const MaxWeight = 1_000_000

// DefaultMix is mostly browsing with some checkouts: restaurants 15, menu
// 30, home 25, checkout 15, review 5, order 10.
func DefaultMix() Mix {
	return Mix{ActionRestaurants: 15, ActionMenu: 30, ActionHome: 25, ActionCheckout: 15, ActionReview: 5, ActionOrder: 10}
}

// Validate returns an error wrapping ErrInvalid when m names an unknown
// action, has a weight outside 0..MaxWeight, or weighs nothing at all.
func (m Mix) Validate() error {
	total := 0
	for a, w := range m {
		if !isAction(a) {
			return fmt.Errorf("%w: the mix names no action %s; actions are %s", ErrInvalid, fooddelivery.Quote(a), strings.Join(Actions(), ", "))
		}
		if w < 0 || w > MaxWeight {
			return fmt.Errorf("%w: the weight of %s is %d; weights are 0..%d", ErrInvalid, a, w, MaxWeight)
		}
		total += w
	}
	if total == 0 {
		return fmt.Errorf("%w: the mix weighs nothing; give at least one action a positive weight (actions are %s)", ErrInvalid, strings.Join(Actions(), ", "))
	}
	return nil
}

func (m Mix) clone() Mix { return maps.Clone(m) }

func isAction(a string) bool {
	for _, x := range Actions() {
		if x == a {
			return true
		}
	}
	return false
}

// The draws of customer n, all fooddelivery.Draw(seed, "customer-<n>", k).
const (
	drawAction = iota
	drawToken
	drawRestaurant
	drawSignedIn
	drawCount // lines of a checkout, stars of a review
	drawText
	drawLookup
	drawLines // then two per line: the dish and its quantity
)

// Choose returns the action customer n takes under seed and mix: the
// draw fooddelivery.Draw(seed, "customer-<n>", 0) picks an action with
// probability proportional to its weight, walking the actions in the
// order of Actions. mix must pass Validate.
func Choose(seed, n int64, mix Mix) string {
	total := 0
	for _, a := range Actions() {
		total += mix[a]
	}
	x := int(fooddelivery.Draw(seed, customerKey(n), drawAction) * float64(total))
	for _, a := range Actions() {
		if x < mix[a] {
			return a
		}
		x -= mix[a]
	}
	return Actions()[len(Actions())-1] // not reached for a valid mix
}

func customerKey(n int64) string { return "customer-" + strconv.FormatInt(n, 10) }

// Visit is one customer's request.
type Visit struct {
	// Action is one of the Action constants.
	Action string
	// Token is the customer's bearer token, or "" for an anonymous visit.
	Token string
	// Query and Variables are the GraphQL request.
	Query     string
	Variables map[string]any

	key string // the customer's draw key
}

// GraphQL documents of the visits.
const (
	queryRestaurants = `query Restaurants { restaurants { id name cuisine } }`
	queryMenu        = `query Menu($id: ID!) { restaurant(id: $id) { id name menu { id name priceCents } menuStale eta } }`
	queryHome        = `query Home { home { restaurants { id name menu { id name priceCents } menuStale eta } recommendations { id name } } }`
	queryCheckout    = `mutation Checkout($in: PlaceOrderInput!) { placeOrder(input: $in) { id status totalCents courierId } }`
	queryReview      = `mutation Review($in: ReviewInput!) { submitReview(input: $in) { id stars } }`
	queryOrder       = `query Order($id: ID!) { order(id: $id) { id status totalCents courierId } }`
)

// reviewTexts are what reviewing customers write.
var reviewTexts = []string{
	"Arrived hot and on time.",
	"Generous portions, would order again.",
	"A little salty this time.",
	"The courier was friendly.",
	"Took a while, but worth the wait.",
}

// visit builds customer n's request under the current mix (g.mu held). An
// order lookup gets its id and token when it is sent.
func (g *Generator) visit(n int64) Visit {
	key := customerKey(n)
	draw := func(k int) float64 { return fooddelivery.Draw(g.seed, key, k) }
	pick := func(k, n int) int { return int(draw(k) * float64(n)) }
	v := Visit{Action: Choose(g.seed, n, g.mix), key: key}
	token := g.tokens[pick(drawToken, len(g.tokens))]
	r := g.restaurants[pick(drawRestaurant, len(g.restaurants))]
	switch v.Action {
	case ActionRestaurants:
		v.Query = queryRestaurants
	case ActionMenu:
		v.Query = queryMenu
		v.Variables = map[string]any{"id": r.id}
	case ActionHome:
		v.Query = queryHome
		if draw(drawSignedIn) < 0.5 {
			v.Token = token
		}
	case ActionCheckout:
		v.Query = queryCheckout
		v.Token = token
		lines := 1 + pick(drawCount, 3)
		items := make([]any, lines)
		for i := range items {
			items[i] = map[string]any{
				"dishId":   r.dishes[pick(drawLines+2*i, len(r.dishes))],
				"quantity": 1 + pick(drawLines+2*i+1, 2),
			}
		}
		v.Variables = map[string]any{"in": map[string]any{"restaurantId": r.id, "items": items, "card": "tok_visa"}}
	case ActionReview:
		v.Query = queryReview
		v.Token = token
		v.Variables = map[string]any{"in": map[string]any{
			"restaurantId": r.id,
			"stars":        1 + pick(drawCount, 5),
			"text":         reviewTexts[pick(drawText, len(reviewTexts))],
		}}
	case ActionOrder:
		v.Query = queryOrder
	}
	return v
}
