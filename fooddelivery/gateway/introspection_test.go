package gateway_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"
)

// The introspection result, as graphql-js's getIntrospectionQuery asks for
// it (testdata/introspection*.graphql hold its text, version 16.15.0).
type introTypeRef struct {
	Kind   string        `json:"kind"`
	Name   *string       `json:"name"`
	OfType *introTypeRef `json:"ofType"`
}

// String renders a type reference in SDL: [Dish!]!.
func (r *introTypeRef) String() string {
	switch {
	case r == nil:
		return "<missing>"
	case r.Kind == "NON_NULL":
		return r.OfType.String() + "!"
	case r.Kind == "LIST":
		return "[" + r.OfType.String() + "]"
	case r.Name == nil:
		return "<unnamed " + r.Kind + ">"
	}
	return *r.Name
}

type introInputValue struct {
	Name         string       `json:"name"`
	Description  *string      `json:"description"`
	Type         introTypeRef `json:"type"`
	DefaultValue *string      `json:"defaultValue"`
	IsDeprecated *bool        `json:"isDeprecated"` // asked for by the full fixture only
}

type introField struct {
	Name              string            `json:"name"`
	Description       *string           `json:"description"`
	Args              []introInputValue `json:"args"`
	Type              introTypeRef      `json:"type"`
	IsDeprecated      bool              `json:"isDeprecated"`
	DeprecationReason *string           `json:"deprecationReason"`
}

type introEnumValue struct {
	Name         string  `json:"name"`
	Description  *string `json:"description"`
	IsDeprecated bool    `json:"isDeprecated"`
}

type introFullType struct {
	Kind          string            `json:"kind"`
	Name          string            `json:"name"`
	Description   *string           `json:"description"`
	Fields        []introField      `json:"fields"`
	InputFields   []introInputValue `json:"inputFields"`
	Interfaces    []introTypeRef    `json:"interfaces"`
	EnumValues    []introEnumValue  `json:"enumValues"`
	PossibleTypes []introTypeRef    `json:"possibleTypes"`
}

type introDirective struct {
	Name        string            `json:"name"`
	Description *string           `json:"description"`
	Locations   []string          `json:"locations"`
	Args        []introInputValue `json:"args"`
}

type introSchema struct {
	Schema struct {
		Description      *string          `json:"description"`
		QueryType        *introTypeRef    `json:"queryType"`
		MutationType     *introTypeRef    `json:"mutationType"`
		SubscriptionType *introTypeRef    `json:"subscriptionType"`
		Types            []introFullType  `json:"types"`
		Directives       []introDirective `json:"directives"`
	} `json:"__schema"`
}

// fixture reads a query of testdata, without its first (comment) line.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	_, q, _ := strings.Cut(string(b), "\n")
	return q
}

// loadSchema parses schema.graphql as the gateway does.
func loadSchema(t *testing.T) *ast.Schema {
	t.Helper()
	b, err := os.ReadFile("schema.graphql")
	require.NoError(t, err)
	s, err := validator.LoadSchema(validator.Prelude, &ast.Source{Name: "schema.graphql", Input: string(b)})
	require.NoError(t, err)
	return s
}

func desc(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func defaultValue(v *ast.Value) *string {
	if v == nil {
		return nil
	}
	s := v.String()
	return &s
}

// checkInputValues compares introspected arguments or input fields with
// their definitions.
func checkInputValues(t *testing.T, where string, got []introInputValue, want []*ast.ArgumentDefinition, full bool) {
	t.Helper()
	require.Len(t, got, len(want), "%s: how many", where)
	for i, w := range want {
		g := got[i]
		assert.Equal(t, w.Name, g.Name, "%s: argument %d", where, i)
		assert.Equal(t, desc(w.Description), g.Description, "%s.%s: description", where, w.Name)
		assert.Equal(t, w.Type.String(), g.Type.String(), "%s.%s: type", where, w.Name)
		assert.Equal(t, defaultValue(w.DefaultValue), g.DefaultValue, "%s.%s: default value", where, w.Name)
		if full {
			require.NotNil(t, g.IsDeprecated, "%s.%s: isDeprecated was asked for", where, w.Name)
			assert.False(t, *g.IsDeprecated, "%s.%s: isDeprecated", where, w.Name)
		}
	}
}

func asArguments(fields ast.FieldList) []*ast.ArgumentDefinition {
	out := make([]*ast.ArgumentDefinition, 0, len(fields))
	for _, f := range fields {
		out = append(out, &ast.ArgumentDefinition{Name: f.Name, Description: f.Description, Type: f.Type, DefaultValue: f.DefaultValue})
	}
	return out
}

func TestIntrospectionQueryOfGraphQLJSDescribesTheSchema(t *testing.T) {
	want := loadSchema(t)
	for _, name := range []string{"introspection.graphql", "introspection_full.graphql"} {
		t.Run(name, func(t *testing.T) {
			full := strings.Contains(name, "full")
			query := fixture(t, name)
			s := newSystem()
			serve(t, s.deps(), func(t *testing.T, c *client) {
				resp := c.query(t, "", query, nil)
				require.Empty(t, resp.Errors, "graphql-js's introspection query (15 levels deep) runs whole: it is exempt from the depth and cost limits")
				var got introSchema
				require.NoError(t, json.Unmarshal(resp.Data, &got))
				sc := got.Schema

				require.NotNil(t, sc.QueryType)
				assert.Equal(t, "Query", sc.QueryType.String())
				require.NotNil(t, sc.MutationType)
				assert.Equal(t, "Mutation", sc.MutationType.String())
				assert.Nil(t, sc.SubscriptionType, "the schema has no subscriptions")
				if full { // schemaDescription asks for it
					assert.Equal(t, desc(want.Description), sc.Description, "the schema's description")
				} else {
					assert.Nil(t, sc.Description, "not asked for")
				}

				byName := map[string]introFullType{}
				for _, typ := range sc.Types {
					byName[typ.Name] = typ
				}
				assert.Len(t, sc.Types, len(want.Types), "every type of the schema, built-in scalars and introspection types included, once")
				for _, builtin := range []string{"String", "Int", "Float", "Boolean", "ID", "__Schema", "__Type", "__TypeKind"} {
					assert.Contains(t, byName, builtin, "built-in type %s", builtin)
				}
				for name, def := range want.Types {
					g, ok := byName[name]
					if !assert.True(t, ok, "type %s is missing", name) {
						continue
					}
					assert.Equal(t, string(def.Kind), g.Kind, "%s: kind", name)
					assert.Equal(t, desc(def.Description), g.Description, "%s: description", name)
					switch def.Kind {
					case ast.Object:
						var fields []*ast.FieldDefinition
						for _, f := range def.Fields {
							if !strings.HasPrefix(f.Name, "__") {
								fields = append(fields, f)
							}
						}
						require.Len(t, g.Fields, len(fields), "%s: fields", name)
						for i, f := range fields {
							gf := g.Fields[i]
							assert.Equal(t, f.Name, gf.Name, "%s: field %d, in schema order", name, i)
							assert.Equal(t, desc(f.Description), gf.Description, "%s.%s: description", name, f.Name)
							assert.Equal(t, f.Type.String(), gf.Type.String(), "%s.%s: type", name, f.Name)
							assert.False(t, gf.IsDeprecated, "%s.%s", name, f.Name)
							checkInputValues(t, name+"."+f.Name, gf.Args, f.Arguments, full)
						}
						assert.NotNil(t, g.Interfaces, "%s: an object lists its interfaces, even none", name)
						assert.Nil(t, g.InputFields, "%s: an object has no input fields", name)
					case ast.InputObject:
						checkInputValues(t, name, g.InputFields, asArguments(def.Fields), full)
						assert.Nil(t, g.Fields, "%s: an input object has no fields", name)
					case ast.Enum:
						require.Len(t, g.EnumValues, len(def.EnumValues), "%s: values", name)
						for i, v := range def.EnumValues {
							assert.Equal(t, v.Name, g.EnumValues[i].Name, "%s: value %d", name, i)
							assert.Equal(t, desc(v.Description), g.EnumValues[i].Description, "%s.%s: description", name, v.Name)
						}
					case ast.Scalar:
						assert.Nil(t, g.Fields, "%s: a scalar has no fields", name)
						assert.Nil(t, g.EnumValues, "%s: a scalar has no values", name)
					}
				}

				var directives []string
				for _, d := range sc.Directives {
					directives = append(directives, d.Name)
					def := want.Directives[d.Name]
					if !assert.NotNil(t, def, "directive @%s is not in the schema", d.Name) {
						continue
					}
					assert.Equal(t, desc(def.Description), d.Description, "@%s: description", d.Name)
					var locs []string
					for _, l := range def.Locations {
						locs = append(locs, string(l))
					}
					assert.Equal(t, locs, d.Locations, "@%s: locations", d.Name)
					checkInputValues(t, "@"+d.Name, d.Args, def.Arguments, full)
				}
				slices.Sort(directives)
				assert.Equal(t, []string{"deprecated", "include", "oneOf", "skip", "specifiedBy"}, directives,
					"the schema's directives, without @defer, which the gateway does not implement")
			})
		})
	}
}

func TestIntrospectionOfOneTypeAndTypename(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "", `{ __typename
			restaurant: __type(name: "Restaurant") { kind name fields { name type { kind name ofType { kind name ofType { kind name } } } } }
			input: __type(name: "PlaceOrderInput") { kind inputFields { name type { kind ofType { kind ofType { kind ofType { name } } } } } }
			none: __type(name: "Spiciness") { name }
			restaurants { __typename } }`, nil)
		require.Empty(t, resp.Errors)
		var got struct {
			Typename   string `json:"__typename"`
			Restaurant struct {
				Kind   string `json:"kind"`
				Name   string `json:"name"`
				Fields []struct {
					Name string       `json:"name"`
					Type introTypeRef `json:"type"`
				} `json:"fields"`
			} `json:"restaurant"`
			Input struct {
				Kind        string `json:"kind"`
				InputFields []struct {
					Name string       `json:"name"`
					Type introTypeRef `json:"type"`
				} `json:"inputFields"`
			} `json:"input"`
			None        *struct{} `json:"none"`
			Restaurants []struct {
				Typename string `json:"__typename"`
			} `json:"restaurants"`
		}
		require.NoError(t, resp.Decode(&got))
		assert.Equal(t, "Query", got.Typename)
		assert.Equal(t, "OBJECT", got.Restaurant.Kind)
		var fields []string
		for _, f := range got.Restaurant.Fields {
			fields = append(fields, f.Name+": "+f.Type.String())
		}
		assert.Equal(t, []string{"id: ID!", "name: String!", "cuisine: String!", "menu: [Dish!]", "menuStale: Boolean!", "eta: String"}, fields)
		assert.Equal(t, "INPUT_OBJECT", got.Input.Kind)
		require.Len(t, got.Input.InputFields, 3)
		assert.Equal(t, "items", got.Input.InputFields[1].Name)
		assert.Equal(t, "[OrderLineInput!]!", got.Input.InputFields[1].Type.String())
		assert.Nil(t, got.None, "__type of an unknown name is null")
		require.Len(t, got.Restaurants, 3)
		assert.Equal(t, "Restaurant", got.Restaurants[0].Typename)
		assert.Zero(t, s.eta.calls.Load()+s.menu.menuCalls.Load(), "introspection and __typename call no service")
	})
}

func TestIntrospectionIsBoundedAndDeferIsRefused(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		deep := `{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }`
		resp := c.query(t, "", deep, nil)
		require.NotEmpty(t, resp.Errors)
		assert.Equal(t, gateway.CodeValidationFailed, resp.Errors[0].Code())
		assert.Contains(t, resp.Errors[0].Message, "introspection depth", "four nested list fields of __Type are refused, as graphql-js refuses them")
		assert.Nil(t, resp.Data)

		resp = c.query(t, "", `{ restaurants { id ... @defer { eta } } }`, nil)
		require.NotEmpty(t, resp.Errors)
		assert.Equal(t, gateway.CodeValidationFailed, resp.Errors[0].Code())
		assert.Contains(t, resp.Errors[0].Message, "@defer", "the client learns the directive is not supported")
		assert.Zero(t, s.menu.restaurantsCalls.Load(), "a refused query runs nothing")
	})
}

func TestIntrospectionCannotBeMultipliedByAliases(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		for _, tc := range []struct{ name, q, says string }{
			{"aliases of a list field", `{ __schema { a: types { name } b: types { name } } }`, "types twice"},
			{"aliases through fragments", `{ __schema { types { ...A ...B } } } fragment A on __Type { x: ofType { name } } fragment B on __Type { y: ofType { name } }`, "ofType twice"},
			{"aliases deep down", `{ __type(name: "Restaurant") { fields { type { a: ofType { name } b: ofType { kind } } } } }`, "ofType twice"},
			{"too many roots", `{ ` + aliasedTypes(11) + ` }`, "more than 10 introspection fields"},
		} {
			resp := c.query(t, "", tc.q, nil)
			require.NotEmpty(t, resp.Errors, tc.name)
			assert.Equal(t, gateway.CodeValidationFailed, resp.Errors[0].Code(), tc.name)
			assert.Contains(t, resp.Errors[0].Message, tc.says, tc.name)
			assert.Nil(t, resp.Data, "%s: nothing ran", tc.name)
		}
		resp := c.query(t, "", `{ `+aliasedTypes(9)+` __schema { types { name } } __schema { types { name } } }`, nil)
		assert.Empty(t, resp.Errors, "ten __type fields are fine, and the same field under the same key in two places merges")
	})
}

// aliasedTypes selects n types by name, each under its own alias.
func aliasedTypes(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(" t")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(`: __type(name: "Dish") { name }`)
	}
	return b.String()
}
