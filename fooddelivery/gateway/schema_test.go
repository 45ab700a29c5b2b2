package gateway_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/gophereats/resilience/fooddelivery/auth"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
)

// The schema tells clients which card tokens work; the payment service
// decides. The two lists must not drift apart.
func TestSchemaListsThePaymentServicesTestCards(t *testing.T) {
	text, err := os.ReadFile("schema.graphql")
	require.NoError(t, err)
	schema, err := validator.LoadSchema(validator.Prelude, &ast.Source{Name: "schema.graphql", Input: string(text)})
	require.NoError(t, err, "the schema loads")
	input := schema.Types["PlaceOrderInput"]
	require.NotNil(t, input, "the schema has PlaceOrderInput")
	card := input.Fields.ForName("card")
	require.NotNil(t, card, "PlaceOrderInput has a card field")
	desc := card.Description

	list := func(label string) []string {
		m := regexp.MustCompile(regexp.QuoteMeta(label) + ` ([^.]*)\.`).FindStringSubmatch(desc)
		require.NotNil(t, m, "the description of PlaceOrderInput.card has a sentence %q...: %q", label, desc)
		return strings.Split(m[1], ", ")
	}
	charged, declined := list("Test cards that are charged:"), list("Always declined:")
	assert.ElementsMatch(t, payment.TestCards(), charged, "the schema's charged cards are payment.TestCards")
	assert.Equal(t, []string{payment.DeclinedCard}, declined, "the schema's declined card is payment.DeclinedCard")
	for _, tok := range regexp.MustCompile(`tok_\w+`).FindAllString(desc, -1) {
		assert.True(t, slices.Contains(charged, tok) || slices.Contains(declined, tok), "token %s in the description is in one of the lists", tok)
	}
}

// The schema's description states the sign-in tokens and the limits a
// client meets; they must say what the code does.
func TestSchemaDescriptionStatesTokensAndLimits(t *testing.T) {
	text, err := os.ReadFile("schema.graphql")
	require.NoError(t, err)
	s, err := validator.LoadSchema(validator.Prelude, &ast.Source{Name: "schema.graphql", Input: string(text)})
	require.NoError(t, err)
	desc := strings.Join(strings.Fields(s.Description), " ")

	var tokens []string
	for tok := range auth.DefaultTokens() {
		tokens = append(tokens, tok)
	}
	slices.Sort(tokens)
	assert.Contains(t, desc, "the test sign-in tokens are "+strings.Join(tokens, ", ")+".", "auth.DefaultTokens, sorted")
	assert.Contains(t, desc, fmt.Sprintf("cost at most %d", gateway.DefaultMaxCost))
	assert.Contains(t, desc, fmt.Sprintf("each mutation %d", gateway.MutationCost))
	assert.Contains(t, desc, fmt.Sprintf("(%d restaurants)", gateway.ListSizes["Query.restaurants"]))

	line := s.Types["OrderLineInput"]
	require.NotNil(t, line)
	assert.Contains(t, line.Description, fmt.Sprintf("1 to %d times", order.MaxQuantity))
	assert.Equal(t, fmt.Sprintf("1 to %d.", order.MaxQuantity), line.Fields.ForName("quantity").Description)
	assert.Equal(t, fmt.Sprintf("At most %d lines.", order.MaxLines), s.Types["PlaceOrderInput"].Fields.ForName("items").Description)
}
