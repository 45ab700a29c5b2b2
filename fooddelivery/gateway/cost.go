package gateway

import (
	"fmt"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// The cost limit bounds the work one request can ask of the services
// behind the gateway. A query's cost is computed from its text after
// validation and before anything runs:
//
//   - each field whose resolver calls a service costs 1, and each
//     mutation MutationCost; scalars, __typename and introspection cost 0
//     (introspection is bounded by checkIntrospection instead);
//   - what is selected under a list field counts once per expected item of
//     that list (ListSizes, DefaultListSize for lists it does not name);
//   - every occurrence counts: aliases of the same field, and fragments
//     each time they are spread. Fields skipped by @skip or @include are
//     not counted.
//
// So { restaurants { eta } } costs 1 + 10 x 1 = 11, and 333 aliases of it
// cost 3,663, far over DefaultMaxCost, while the home page's query (home
// { restaurants { id name menu { id name priceCents } menuStale eta }
// recommendations { id name } }) costs 1 + 10 x 3 + 1 = 32, 16% of it. The
// design follows the calculated query costs of public GraphQL APIs
// (GitHub's GraphQL API rate limits count the requests needed to fulfil a
// query, scaling connections by their first/last arguments).

// DefaultMaxCost is the most a query may cost unless Deps.MaxCost says
// otherwise: 200.
const DefaultMaxCost = 200

// DefaultListSize is the expected length of a list field that ListSizes
// does not name: 10.
const DefaultListSize = 10

// ListSizes is the expected length of each list field of the schema,
// keyed "Type.field", used to scale the cost of what is selected under it.
// The estimates are upper ends of what the system holds: the catalog has
// six restaurants, menus have a handful of dishes.
var ListSizes = map[string]int{
	"Query.restaurants":    10,
	"Home.restaurants":     10,
	"Home.recommendations": 10,
	"Restaurant.menu":      20,
	"Order.items":          20,
}

// MutationCost is the cost of each mutation field: a write calls the auth,
// order, menu, payment and courier services, and a request's mutations
// run one after the other, so 10 per write allows 20 writes at the
// default limit.
const MutationCost = 10

// fieldCost is what a field costs by itself: MutationCost for a mutation,
// 1 for a read that calls a service (remote), 0 otherwise.
func fieldCost(typeName, field string) int {
	switch {
	case typeName == "Mutation":
		return MutationCost
	case remote[typeName+"."+field]:
		return 1
	}
	return 0
}

// costCeiling keeps cost arithmetic far from overflow: a query that
// reaches it is over any sensible limit anyway.
const costCeiling = 1 << 40

// DefaultMaxAnswerFields is the most fields an answer may hold unless
// Deps.MaxAnswerFields says otherwise: 5,000. The cost counts what a
// query asks of the services; this counts what it asks of the gateway's
// answer: every field but introspection's, scalars and __typename
// included, each time it is
// selected (aliases, fragment spreads), scaled by the expected length of
// the lists above it, as the cost is. The home page's query holds 1 + (1 +
// 10 x (4 + 1 + 20 x 3)) + (1 + 10 x 2) = 673 (13% of the limit); 100 aliases
// of restaurants spreading 300 aliased names, 6 KB of query text that
// costs 100, would hold 300,100 and answered 4.2 MB before the limit.
const DefaultMaxAnswerFields = 5000

// answerFields returns the number of fields the answer to op would hold,
// at most costCeiling.
func answerFields(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) int {
	return walkCost(doc, op, vars, func(string, string) int { return 1 }, true)
}

// queryCost returns the cost of running op with vars, at most costCeiling.
// The document must be valid: fragment cycles are refused by validation.
func queryCost(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) int {
	return walkCost(doc, op, vars, fieldCost, false)
}

// walkCost sums weight over the fields op selects, scaled by the lists
// above them; withMeta counts each __typename as 1 too. Introspection
// fields are left out (checkIntrospection bounds them).
func walkCost(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any, weight func(typeName, field string) int, withMeta bool) int {
	memo := map[string]int{}
	var set func(ast.SelectionSet) int
	set = func(sels ast.SelectionSet) int {
		total := 0
		for _, sel := range sels {
			c := 0
			switch sel := sel.(type) {
			case *ast.Field:
				if !included(sel.Directives, vars) {
					continue
				}
				if withMeta && sel.Name == "__typename" {
					total = costPlus(total, 1)
					continue
				}
				if strings.HasPrefix(sel.Name, "__") || sel.Definition == nil {
					continue // introspection: bounded by checkIntrospection
				}
				c = set(sel.SelectionSet)
				for t := sel.Definition.Type; t != nil; t = t.Elem {
					if t.Elem != nil {
						c = costTimes(c, listSize(sel.ObjectDefinition, sel.Name))
					}
				}
				if sel.ObjectDefinition != nil {
					c = costPlus(c, weight(sel.ObjectDefinition.Name, sel.Name))
				}
			case *ast.InlineFragment:
				if included(sel.Directives, vars) {
					c = set(sel.SelectionSet)
				}
			case *ast.FragmentSpread:
				if !included(sel.Directives, vars) {
					continue
				}
				v, ok := memo[sel.Name]
				if !ok {
					memo[sel.Name] = 0 // a cycle, impossible after validation, costs nothing more
					if frag := doc.Fragments.ForName(sel.Name); frag != nil {
						v = set(frag.SelectionSet)
					}
					memo[sel.Name] = v
				}
				c = v
			}
			total = costPlus(total, c)
		}
		return total
	}
	return set(op.SelectionSet)
}

func listSize(obj *ast.Definition, field string) int {
	if obj != nil {
		if n, ok := ListSizes[obj.Name+"."+field]; ok {
			return n
		}
	}
	return DefaultListSize
}

func costPlus(a, b int) int { return min(a+b, costCeiling) }

func costTimes(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > costCeiling/b {
		return costCeiling
	}
	return a * b
}

// checkAnswerSize returns an ANSWER_TOO_LARGE request error when the
// answer to op would hold more than limit fields (see
// DefaultMaxAnswerFields). The error's extensions carry "fields" and
// "limit" beside the code.
func checkAnswerSize(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any, limit int) *Error {
	n := answerFields(doc, op, vars)
	if n <= limit {
		return nil
	}
	var locs []Location
	if op.Position != nil {
		locs = []Location{{Line: op.Position.Line, Column: op.Position.Column}}
	}
	return &Error{
		Message: fmt.Sprintf("the answer would hold about %d fields, more than the gateway's limit of %d, so nothing was run: "+
			"every field counts each time it is selected (aliases and fragments too), once per expected item of the lists above it; "+
			"ask for fewer fields or aliases, or split the query", n, limit),
		Locations:  locs,
		Extensions: map[string]any{"code": CodeAnswerTooLarge, "fields": n, "limit": limit},
	}
}

// checkCost returns a COST_LIMIT_EXCEEDED request error when op costs more
// than limit. The error's extensions carry "cost" and "limit" beside the
// code.
func checkCost(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any, limit int) *Error {
	c := queryCost(doc, op, vars)
	if c <= limit {
		return nil
	}
	shown := fmt.Sprint(c)
	if c >= costCeiling {
		shown = fmt.Sprintf("more than %d", costCeiling-1)
	}
	var locs []Location
	if op.Position != nil {
		locs = []Location{{Line: op.Position.Line, Column: op.Position.Column}}
	}
	return &Error{
		Message: fmt.Sprintf("the query would cost %s, more than the gateway's limit of %d, so nothing was run: "+
			"each field that calls a service costs 1, and what is under a list counts once per expected item "+
			"(restaurants: %d); ask for fewer fields or aliases, or split the query", shown, limit, ListSizes["Query.restaurants"]),
		Locations:  locs,
		Extensions: map[string]any{"code": CodeCostLimitExceeded, "cost": c, "limit": limit},
	}
}
