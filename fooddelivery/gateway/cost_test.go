package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aliases returns a query of n aliases of restaurants { eta }.
func aliases(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: restaurants { eta }", i)
	}
	b.WriteString(" }")
	return b.String()
}

func TestCostLimitStopsAliasAmplificationBeforeAnyCall(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		q := aliases(333)
		require.Less(t, len(q), 10<<10, "a small query: %d bytes", len(q))
		resp := c.query(t, "", q, nil)
		require.Len(t, resp.Errors, 1, "one request error")
		e := resp.Errors[0]
		assert.Equal(t, gateway.CodeCostLimitExceeded, e.Code())
		assert.Nil(t, resp.Data, "nothing ran")
		want := 333 * (1 + gateway.ListSizes["Query.restaurants"])
		assert.EqualValues(t, want, e.Extensions["cost"], "333 x (1 for restaurants + %d restaurants x 1 for eta)", gateway.ListSizes["Query.restaurants"])
		assert.EqualValues(t, gateway.DefaultMaxCost, e.Extensions["limit"])
		assert.Contains(t, e.Message, fmt.Sprint(want), "the message names the cost")
		assert.Contains(t, e.Message, fmt.Sprint(gateway.DefaultMaxCost), "and the limit")
		assert.Zero(t, s.eta.calls.Load(), "333 aliases of restaurants { eta } must cause 0 courier calls")
		assert.Zero(t, s.menu.restaurantsCalls.Load(), "nor any menu call")
	})
}

func TestHomePageQueriesCostAtMostAQuarterOfTheLimit(t *testing.T) {
	s := newSystem()
	deps := s.deps()
	deps.MaxCost = gateway.DefaultMaxCost / 4
	serve(t, deps, func(t *testing.T, c *client) {
		for _, q := range []string{
			homeQuery,
			`{ home { restaurants { id name menu { id name priceCents } menuStale eta } recommendations { id name } } }`,
			`{ home { restaurants { name menu { name priceCents } eta } recommendations { name } } }`,
		} {
			resp := c.query(t, "", q, nil)
			for _, e := range resp.Errors {
				assert.NotEqual(t, gateway.CodeCostLimitExceeded, e.Code(), "with a limit of %d: %s\n%s", deps.MaxCost, e.Message, q)
			}
		}
	})
}

func TestCostCountsWhatRuns(t *testing.T) {
	s := newSystem()
	deps := s.deps()
	deps.MaxCost = 11 // restaurants { eta } costs 1 + 10 x 1
	serve(t, deps, func(t *testing.T, c *client) {
		for _, tc := range []struct {
			name string
			q    string
			vars map[string]any
			over bool
		}{
			{"at the limit", `{ restaurants { eta } }`, nil, false},
			{"one alias more", `{ restaurants { eta } again: restaurants { id } }`, nil, true},
			{"a fragment counts where it is spread", `{ a: restaurants { ...E } b: restaurants { ...E } } fragment E on Restaurant { eta }`, nil, true},
			{"a skipped field costs nothing", `query($no: Boolean!) { restaurants { eta } again: restaurants @skip(if: $no) { eta } }`, map[string]any{"no": true}, false},
			{"an included field costs", `query($no: Boolean!) { restaurants { eta } again: restaurants @skip(if: $no) { eta } }`, map[string]any{"no": false}, true},
			{"scalars cost nothing", `{ restaurants { id name cuisine __typename eta } }`, nil, false},
			{"introspection costs nothing", `{ restaurants { eta } __schema { types { name fields { name } } } __type(name: "Dish") { name } }`, nil, false},
		} {
			resp := c.query(t, "", tc.q, tc.vars)
			over := len(resp.Errors) > 0 && resp.Errors[0].Code() == gateway.CodeCostLimitExceeded
			assert.Equal(t, tc.over, over, "%s: over a limit of 11? errors %+v", tc.name, resp.Errors)
		}
	})
}

func TestCostOfNestedFragmentsStaysBounded(t *testing.T) {
	// Each fragment spreads the previous one twice: the cost doubles 60
	// times, far past int64, and must neither overflow nor take long.
	var b strings.Builder
	b.WriteString("{ ...F60 } fragment F0 on Query { restaurants { eta } }")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, " fragment F%d on Query { a%d: restaurants { id } ...F%d ...F%d }", i, i, i-1, i-1)
	}
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "", b.String(), nil)
		require.NotEmpty(t, resp.Errors)
		e := resp.Errors[0]
		require.Equal(t, gateway.CodeCostLimitExceeded, e.Code(), "%s", e.Message)
		assert.Contains(t, e.Message, "more than", "a cost past the ceiling is reported as a bound")
		cost, _ := e.Extensions["cost"].(float64)
		assert.Positive(t, cost, "the cost saturates instead of overflowing to a negative number")
		assert.Zero(t, s.menu.restaurantsCalls.Load())
	})
}

func TestETAIsReadOncePerRestaurantAndRequest(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "", `{ a: restaurants { eta } b: restaurants { eta } home { restaurants { eta } } }`, nil)
		require.Empty(t, resp.Errors)
		assert.EqualValues(t, 3, s.eta.calls.Load(), "three restaurants, each asked for its ETA three times: one call each")
	})
}

func TestMutationsCostMore(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		var b strings.Builder
		b.WriteString("mutation($i: ReviewInput!) {")
		n := gateway.DefaultMaxCost/gateway.MutationCost + 1
		for i := range n {
			fmt.Fprintf(&b, " a%d: submitReview(input: $i) { id }", i)
		}
		b.WriteString(" }")
		vars := map[string]any{"i": map[string]any{"restaurantId": "r1", "stars": 5, "text": "good"}}
		resp := c.query(t, "t-alice", b.String(), vars)
		require.NotEmpty(t, resp.Errors)
		assert.Equal(t, gateway.CodeCostLimitExceeded, resp.Errors[0].Code(), "%d writes in one request", n)
		assert.Zero(t, s.reviews.calls.Load(), "not one of them ran")
	})
}

// amplifier returns a query of n aliases of restaurants, each spreading a
// fragment of m aliased names: small to send, cheap by cost (names call
// no service), huge to answer.
func amplifier(n, m int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: restaurants { ...N }", i)
	}
	b.WriteString(" } fragment N on Restaurant {")
	for i := range m {
		fmt.Fprintf(&b, " n%d: name", i)
	}
	b.WriteString(" }")
	return b.String()
}

func TestAnswerSizeLimitStopsFieldAmplificationBeforeAnyCall(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		q := amplifier(100, 300)
		require.Less(t, len(q), 6<<10, "a 6 KB query: %d bytes", len(q))
		resp := c.query(t, "", q, nil)
		require.Len(t, resp.Errors, 1, "one request error")
		e := resp.Errors[0]
		assert.Equal(t, gateway.CodeAnswerTooLarge, e.Code(), "its cost is only 100: the answer's size refuses it (%s)", e.Message)
		assert.Nil(t, resp.Data, "nothing ran")
		want := 100 * (1 + gateway.ListSizes["Query.restaurants"]*300)
		assert.EqualValues(t, want, e.Extensions["fields"], "100 x (restaurants + 10 restaurants x 300 names)")
		assert.EqualValues(t, gateway.DefaultMaxAnswerFields, e.Extensions["limit"])
		assert.Contains(t, e.Message, fmt.Sprint(want))
		assert.Zero(t, s.menu.restaurantsCalls.Load(), "refused before any menu call")
	})
}

func TestHomePageAnswersWellInsideTheSizeLimit(t *testing.T) {
	s := newSystem()
	deps := s.deps()
	deps.MaxAnswerFields = gateway.DefaultMaxAnswerFields / 5
	serve(t, deps, func(t *testing.T, c *client) {
		for _, q := range []string{homeQuery, `{ home { restaurants { id name menu { id name priceCents } menuStale eta } recommendations { id name } } }`} {
			resp := c.query(t, "", q, nil)
			for _, e := range resp.Errors {
				assert.NotEqual(t, gateway.CodeAnswerTooLarge, e.Code(), "the home page's query must fit a fifth of the limit: %s", e.Message)
			}
		}
	})
}
