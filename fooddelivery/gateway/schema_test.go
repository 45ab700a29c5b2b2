package gateway_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"

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
