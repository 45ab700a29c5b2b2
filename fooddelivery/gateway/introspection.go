package gateway

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
)

// Introspection: Query.__schema, Query.__type(name:) and the __Schema,
// __Type, __Field, __InputValue, __EnumValue and __Directive types, as
// section 4 ("Introspection") of the GraphQL specification defines them,
// generated from the parsed schema, so that GraphiQL, Apollo and
// graphql-js's buildClientSchema can load it. Introspection calls no
// service: it costs nothing (see cost.go) and is exempt from the depth
// limit; gqlparser's MaxIntrospectionDepth validation rule (a port of
// graphql-js's MaxIntrospectionDepthRule: at most three nested list fields
// of __Type) bounds it instead.

// unsupportedDirectives are declared by gqlparser's prelude but not
// implemented by the executor. They are hidden from introspection and
// refused by validation (rejectUnsupportedDirectives) when a query uses
// them, so a client never believes a response was deferred when it was not.
var unsupportedDirectives = map[string]string{
	"defer": "incremental delivery (@defer) is not supported by this gateway; remove the directive and the fields arrive in the one response",
}

// rejectUnsupportedDirectives is a validation rule: a query that uses a
// directive of unsupportedDirectives fails validation with a message that
// says so.
var rejectUnsupportedDirectives = core.Rule{
	Name: "RejectUnsupportedDirectives",
	RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
		observers.OnDirective(func(_ *core.Walker, d *ast.Directive) {
			if msg, ok := unsupportedDirectives[d.Name]; ok {
				addError(core.Message("%s", msg), core.At(d.Position))
			}
		})
	},
}

// introType is a __Type: a named type (def) or a wrapping type (wrap is a
// list or a non-null type).
type introType struct {
	def  *ast.Definition
	wrap *ast.Type
}

// inputValue is an __InputValue: an argument of a field or a directive, or
// a field of an input object.
type inputValue struct {
	name, description string
	typ               *ast.Type
	defaultValue      *ast.Value
	directives        ast.DirectiveList
}

// typeRef returns the __Type of a type reference such as [Dish!]!.
func typeRef(t *ast.Type) *introType {
	if t.NonNull || t.Elem != nil {
		return &introType{wrap: t}
	}
	return &introType{def: schema.Types[t.NamedType]}
}

func (t *introType) kind() string {
	switch {
	case t.wrap != nil && t.wrap.NonNull:
		return "NON_NULL"
	case t.wrap != nil:
		return "LIST"
	}
	return string(t.def.Kind)
}

// ofType is the type a wrapping type wraps; nil for a named type.
func (t *introType) ofType() any {
	switch {
	case t.wrap == nil:
		return nil
	case t.wrap.NonNull:
		inner := *t.wrap
		inner.NonNull = false
		return typeRef(&inner)
	}
	return typeRef(t.wrap.Elem)
}

// nullable turns "" into null: the specification's descriptions and names
// are nullable strings.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// deprecation reads @deprecated(reason:) from dirs: whether it is there
// and its reason (the directive's default reason when none is given).
func deprecation(dirs ast.DirectiveList) (bool, any) {
	d := dirs.ForName("deprecated")
	if d == nil {
		return false, nil
	}
	if a := d.Arguments.ForName("reason"); a != nil && a.Value != nil {
		return true, a.Value.Raw
	}
	if def := schema.Directives["deprecated"]; def != nil {
		if a := def.Arguments.ForName("reason"); a != nil && a.DefaultValue != nil {
			return true, a.DefaultValue.Raw
		}
	}
	return true, nil
}

// keep filters items by includeDeprecated, the argument of __Type.fields,
// enumValues, inputFields, __Field.args and __Directive.args.
func keep[T any](items []T, args map[string]any, directives func(T) ast.DirectiveList) []T {
	all, _ := args["includeDeprecated"].(bool)
	out := make([]T, 0, len(items))
	for _, it := range items {
		if dep, _ := deprecation(directives(it)); all || !dep {
			out = append(out, it)
		}
	}
	return out
}

func argumentValues(defs ast.ArgumentDefinitionList) []*inputValue {
	out := make([]*inputValue, 0, len(defs))
	for _, a := range defs {
		out = append(out, &inputValue{name: a.Name, description: a.Description, typ: a.Type, defaultValue: a.DefaultValue, directives: a.Directives})
	}
	return out
}

func inputValueDirectives(v *inputValue) ast.DirectiveList { return v.directives }

// introspectionResolvers returns the resolvers of the introspection
// fields, keyed "Type.field" like the others.
func introspectionResolvers() map[string]resolver {
	m := map[string]resolver{
		"Query.__schema": func(context.Context, *request, any, map[string]any) (any, error) {
			return schema, nil
		},
		"Query.__type": func(_ context.Context, _ *request, _ any, args map[string]any) (any, error) {
			if def := schema.Types[str(args["name"])]; def != nil {
				return &introType{def: def}, nil
			}
			return nil, nil
		},

		"__Schema.description": field(func(s *ast.Schema) any { return nullable(s.Description) }),
		"__Schema.types": field(func(s *ast.Schema) any {
			names := make([]string, 0, len(s.Types))
			for name := range s.Types {
				names = append(names, name)
			}
			slices.Sort(names)
			out := make([]*introType, 0, len(names))
			for _, name := range names {
				out = append(out, &introType{def: s.Types[name]})
			}
			return out
		}),
		"__Schema.queryType":        field(func(s *ast.Schema) any { return rootType(s.Query) }),
		"__Schema.mutationType":     field(func(s *ast.Schema) any { return rootType(s.Mutation) }),
		"__Schema.subscriptionType": field(func(s *ast.Schema) any { return rootType(s.Subscription) }),
		"__Schema.directives": field(func(s *ast.Schema) any {
			out := make([]*ast.DirectiveDefinition, 0, len(s.Directives))
			for name, d := range s.Directives {
				if _, hidden := unsupportedDirectives[name]; !hidden {
					out = append(out, d)
				}
			}
			slices.SortFunc(out, func(a, b *ast.DirectiveDefinition) int { return strings.Compare(a.Name, b.Name) })
			return out
		}),

		"__Type.kind": field(func(t *introType) any { return t.kind() }),
		"__Type.name": field(func(t *introType) any {
			if t.def == nil {
				return nil
			}
			return t.def.Name
		}),
		"__Type.description": field(func(t *introType) any {
			if t.def == nil {
				return nil
			}
			return nullable(t.def.Description)
		}),
		"__Type.specifiedByURL": field(func(t *introType) any {
			if t.def == nil || t.def.Kind != ast.Scalar {
				return nil
			}
			if d := t.def.Directives.ForName("specifiedBy"); d != nil {
				if a := d.Arguments.ForName("url"); a != nil && a.Value != nil {
					return a.Value.Raw
				}
			}
			return nil
		}),
		"__Type.fields": func(_ context.Context, _ *request, parent any, args map[string]any) (any, error) {
			t := parent.(*introType)
			if t.def == nil || (t.def.Kind != ast.Object && t.def.Kind != ast.Interface) {
				return nil, nil
			}
			var fields []*ast.FieldDefinition
			for _, f := range t.def.Fields {
				if !strings.HasPrefix(f.Name, "__") { // __schema, __type and __typename are implicit
					fields = append(fields, f)
				}
			}
			return keep(fields, args, func(f *ast.FieldDefinition) ast.DirectiveList { return f.Directives }), nil
		},
		"__Type.interfaces": field(func(t *introType) any {
			if t.def == nil || (t.def.Kind != ast.Object && t.def.Kind != ast.Interface) {
				return nil
			}
			out := make([]*introType, 0, len(t.def.Interfaces))
			for _, name := range t.def.Interfaces {
				out = append(out, &introType{def: schema.Types[name]})
			}
			return out
		}),
		"__Type.possibleTypes": field(func(t *introType) any {
			if t.def == nil || (t.def.Kind != ast.Union && t.def.Kind != ast.Interface) {
				return nil
			}
			out := []*introType{}
			for _, d := range schema.GetPossibleTypes(t.def) {
				out = append(out, &introType{def: d})
			}
			return out
		}),
		"__Type.enumValues": func(_ context.Context, _ *request, parent any, args map[string]any) (any, error) {
			t := parent.(*introType)
			if t.def == nil || t.def.Kind != ast.Enum {
				return nil, nil
			}
			return keep(t.def.EnumValues, args, func(v *ast.EnumValueDefinition) ast.DirectiveList { return v.Directives }), nil
		},
		"__Type.inputFields": func(_ context.Context, _ *request, parent any, args map[string]any) (any, error) {
			t := parent.(*introType)
			if t.def == nil || t.def.Kind != ast.InputObject {
				return nil, nil
			}
			vals := make([]*inputValue, 0, len(t.def.Fields))
			for _, f := range t.def.Fields {
				vals = append(vals, &inputValue{name: f.Name, description: f.Description, typ: f.Type, defaultValue: f.DefaultValue, directives: f.Directives})
			}
			return keep(vals, args, inputValueDirectives), nil
		},
		"__Type.ofType": field(func(t *introType) any { return t.ofType() }),
		"__Type.isOneOf": field(func(t *introType) any {
			if t.def == nil || t.def.Kind != ast.InputObject {
				return nil
			}
			return t.def.Directives.ForName("oneOf") != nil
		}),

		"__Field.name":        field(func(f *ast.FieldDefinition) any { return f.Name }),
		"__Field.description": field(func(f *ast.FieldDefinition) any { return nullable(f.Description) }),
		"__Field.args": func(_ context.Context, _ *request, parent any, args map[string]any) (any, error) {
			return keep(argumentValues(parent.(*ast.FieldDefinition).Arguments), args, inputValueDirectives), nil
		},
		"__Field.type": field(func(f *ast.FieldDefinition) any { return typeRef(f.Type) }),

		"__InputValue.name":        field(func(v *inputValue) any { return v.name }),
		"__InputValue.description": field(func(v *inputValue) any { return nullable(v.description) }),
		"__InputValue.type":        field(func(v *inputValue) any { return typeRef(v.typ) }),
		"__InputValue.defaultValue": field(func(v *inputValue) any {
			if v.defaultValue == nil {
				return nil
			}
			return v.defaultValue.String() // GraphQL syntax, as the specification asks
		}),

		"__EnumValue.name":        field(func(v *ast.EnumValueDefinition) any { return v.Name }),
		"__EnumValue.description": field(func(v *ast.EnumValueDefinition) any { return nullable(v.Description) }),

		"__Directive.name":         field(func(d *ast.DirectiveDefinition) any { return d.Name }),
		"__Directive.description":  field(func(d *ast.DirectiveDefinition) any { return nullable(d.Description) }),
		"__Directive.isRepeatable": field(func(d *ast.DirectiveDefinition) any { return d.IsRepeatable }),
		"__Directive.locations": field(func(d *ast.DirectiveDefinition) any {
			out := make([]string, 0, len(d.Locations))
			for _, l := range d.Locations {
				out = append(out, string(l))
			}
			return out
		}),
		"__Directive.args": func(_ context.Context, _ *request, parent any, args map[string]any) (any, error) {
			return keep(argumentValues(parent.(*ast.DirectiveDefinition).Arguments), args, inputValueDirectives), nil
		},
	}
	deprecationResolvers(m, "__Field", func(f *ast.FieldDefinition) ast.DirectiveList { return f.Directives })
	deprecationResolvers(m, "__InputValue", inputValueDirectives)
	deprecationResolvers(m, "__EnumValue", func(v *ast.EnumValueDefinition) ast.DirectiveList { return v.Directives })
	return m
}

// deprecationResolvers adds typ's isDeprecated and deprecationReason,
// read from the @deprecated directive among the directives of a value of
// type T.
func deprecationResolvers[T any](m map[string]resolver, typ string, directives func(T) ast.DirectiveList) {
	m[typ+".isDeprecated"] = field(func(v T) any {
		dep, _ := deprecation(directives(v))
		return dep
	})
	m[typ+".deprecationReason"] = field(func(v T) any {
		_, reason := deprecation(directives(v))
		return reason
	})
}

// rootType is the __Type of a root operation type, or null when the schema
// has none (no subscriptions here).
func rootType(def *ast.Definition) any {
	if def == nil {
		return nil
	}
	return &introType{def: def}
}

// maxIntrospectionRoots is how many __schema and __type fields one
// operation may select: enough to ask for a handful of types by name.
const maxIntrospectionRoots = 10

// checkIntrospection bounds what an operation's introspection can produce.
// MaxIntrospectionDepth bounds how deep it nests, not how wide: aliases
// multiply it (s0: __schema { ... } s1: __schema { ... }, and the same at
// every level below), so a 3 KB query could ask for a 100 MB answer. So
// an operation may select at most maxIntrospectionRoots introspection
// root fields, and under them each field once per selection set, under
// one response key (fragments merge as execution merges them). Then the
// answer is at most maxIntrospectionRoots times the schema's own size
// per level of nesting. It runs after validation.
func checkIntrospection(doc *ast.QueryDocument, op *ast.OperationDefinition) *Error {
	type group struct {
		key, name string
		pos       *ast.Position
		sets      []ast.SelectionSet
	}
	visits := 0
	const maxVisits = 100_000 // a walk this long is refused rather than finished
	collect := func(sets []ast.SelectionSet) []*group {
		var groups []*group
		byKey := map[string]*group{}
		seen := map[string]bool{}
		var walk func(ast.SelectionSet)
		walk = func(set ast.SelectionSet) {
			for _, sel := range set {
				visits++
				switch sel := sel.(type) {
				case *ast.Field:
					key := cmp.Or(sel.Alias, sel.Name)
					g := byKey[key]
					if g == nil {
						g = &group{key: key, name: sel.Name, pos: sel.Position}
						byKey[key] = g
						groups = append(groups, g)
					}
					g.sets = append(g.sets, sel.SelectionSet)
				case *ast.InlineFragment:
					walk(sel.SelectionSet)
				case *ast.FragmentSpread:
					if frag := doc.Fragments.ForName(sel.Name); frag != nil && !seen[sel.Name] {
						seen[sel.Name] = true
						walk(frag.SelectionSet)
					}
				}
			}
		}
		for _, s := range sets {
			walk(s)
		}
		return groups
	}
	fail := func(pos *ast.Position, format string, args ...any) *Error {
		var locs []gqlerror.Location
		if pos != nil {
			locs = []gqlerror.Location{{Line: pos.Line, Column: pos.Column}}
		}
		e := locatedError(fmt.Sprintf(format, args...), locs, CodeValidationFailed)
		return &e
	}
	var below func(sets []ast.SelectionSet) *Error
	below = func(sets []ast.SelectionSet) *Error {
		if visits > maxVisits {
			return fail(nil, "the introspection query is too large to check; ask for the schema with one __schema field")
		}
		keyOf := map[string]string{}
		for _, g := range collect(sets) {
			if other, ok := keyOf[g.name]; ok && other != g.key && g.name != "__typename" {
				return fail(g.pos, "introspection asks for %s twice, as %s and %s; ask for each introspection field once per selection",
					g.name, quote(other), quote(g.key))
			}
			keyOf[g.name] = g.key
			if e := below(g.sets); e != nil {
				return e
			}
		}
		return nil
	}
	roots := 0
	for _, g := range collect([]ast.SelectionSet{op.SelectionSet}) {
		if !introspectionRoot(g.name) {
			continue
		}
		if roots++; roots > maxIntrospectionRoots {
			return fail(g.pos, "the query selects more than %d introspection fields (__schema, __type); one __schema field describes the whole schema", maxIntrospectionRoots)
		}
		if e := below(g.sets); e != nil {
			return e
		}
	}
	return nil
}
