package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/telemetry/logs"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// execute runs one GraphQL request and returns the response: request
// errors without data, or data with field errors. overGET is true for a
// GET request, which may run queries only.
func (s *server) execute(ctx context.Context, req Request, token string, tokenErr error, overGET bool) *Response {
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Name: "query", Input: req.Query}, s.d.MaxTokens)
	if err != nil {
		return &Response{Errors: []Error{parseError(err, s.d.MaxTokens)}}
	}
	if e := checkDepth(doc, s.d.MaxDepth); e != nil {
		return &Response{Errors: []Error{*e}}
	}
	if errs := validator.ValidateWithRules(schema, doc, s.rules); len(errs) > 0 {
		out := make([]Error, 0, min(len(errs), maxValidationErrors+1))
		for _, e := range errs[:min(len(errs), maxValidationErrors)] {
			out = append(out, locatedError(e.Message, e.Locations, CodeValidationFailed))
		}
		if len(errs) > maxValidationErrors {
			out = append(out, Error{
				Message:    fmt.Sprintf("and %d more validation errors, not shown; fix the ones above first", len(errs)-maxValidationErrors),
				Extensions: map[string]any{"code": CodeValidationFailed},
			})
		}
		return &Response{Errors: out}
	}
	op, e := pickOperation(doc, req.OperationName)
	if e != nil {
		return &Response{Errors: []Error{*e}}
	}
	if e := checkIntrospection(doc, op); e != nil {
		return &Response{Errors: []Error{*e}}
	}
	if overGET && op.Operation != ast.Query {
		return &Response{Errors: []Error{{
			Message:    fmt.Sprintf("a %s cannot be sent with GET, which is for queries only (a link or a crawler must never place an order); send it with POST", op.Operation),
			Extensions: map[string]any{"code": CodeMethodNotAllowed},
		}}}
	}
	vars, e := coerceVariables(op, req.Variables)
	if e != nil {
		return &Response{Errors: []Error{*e}}
	}
	if e := checkCost(doc, op, vars, s.d.MaxCost); e != nil {
		return &Response{Errors: []Error{*e}}
	}
	if e := checkAnswerSize(doc, op, vars, s.d.MaxAnswerFields); e != nil {
		return &Response{Errors: []Error{*e}}
	}

	x := &request{s: s, ctx: ctx, doc: doc, vars: vars, serial: op.Operation == ast.Mutation, authSent: token != "" || tokenErr != nil}
	x.user = lazy(func() (string, error) { return x.authorize(token, tokenErr) })
	x.restaurantList = lazy(x.readRestaurants)
	root := "Query"
	if op.Operation == ast.Mutation {
		root = "Mutation"
	}
	traceFields(ctx, root, x.collectFields(root, []ast.SelectionSet{op.SelectionSet}))
	data := x.executeSelections(ctx, root, []ast.SelectionSet{op.SelectionSet}, nil, nil)
	b, err := json.Marshal(data) // a nil data (null propagated to the root) encodes as null
	if err != nil {
		b = []byte("null")
		x.addError(nil, nil, &codedError{code: CodeInternal, msg: "internal error: could not encode data"})
	}
	slices.SortStableFunc(x.errs, func(a, b Error) int { return comparePaths(a.Path, b.Path) })
	return &Response{Data: b, Errors: x.errs}
}

// maxValidationErrors is how many validation errors a response lists, as
// graphql-js's validate stops at 100: 600 fields under one alias make
// 120,000 pairwise conflicts, which nobody reads.
const maxValidationErrors = 100

// parseError turns a parser error into a request error. The parser
// reports the token limit without a location and every syntax error with
// one, which is how the two are told apart.
func parseError(err error, maxTokens int) Error {
	var ge *gqlerror.Error
	if !errors.As(err, &ge) {
		return Error{Message: "could not parse the query: " + err.Error(), Extensions: map[string]any{"code": CodeParseFailed}}
	}
	if len(ge.Locations) == 0 {
		return Error{
			Message:    fmt.Sprintf("the query is too large: it has more than %d tokens (names, punctuation, values); ask for fewer fields or split it", maxTokens),
			Extensions: map[string]any{"code": CodeTooLarge},
		}
	}
	return locatedError("syntax error: "+ge.Message, ge.Locations, CodeParseFailed)
}

// locatedError builds a request error whose message ends with where in the
// query it happened ("... at line 2, column 5").
func locatedError(msg string, locs []gqlerror.Location, code string) Error {
	e := Error{Message: msg, Extensions: map[string]any{"code": code}}
	for _, l := range locs {
		e.Locations = append(e.Locations, Location{Line: l.Line, Column: l.Column})
	}
	if len(locs) > 0 {
		e.Message = fmt.Sprintf("%s (at line %d, column %d)", msg, locs[0].Line, locs[0].Column)
	}
	return e
}

// checkDepth returns a TOO_DEEP error when a field of any operation is
// nested more than maxDepth fields deep. It runs before validation, so it
// must survive anything the parser accepts: a fragment spread that names
// no fragment counts as nothing, a fragment cycle is cut where it closes
// (validation reports it), and each fragment's depth is computed once, so
// fragments spreading each other many times cost linear time. What is under
// __schema and __type is not counted: validation's MaxIntrospectionDepth
// rule bounds introspection instead.
func checkDepth(doc *ast.QueryDocument, maxDepth int) *Error {
	memo := map[string]int{}
	onPath := map[string]bool{}
	var depth func(set ast.SelectionSet) int
	depth = func(set ast.SelectionSet) int {
		deepest := 0
		for _, sel := range set {
			d := 0
			switch sel := sel.(type) {
			case *ast.Field:
				d = 1
				if !introspectionRoot(sel.Name) { // bounded by validation instead
					d += depth(sel.SelectionSet)
				}
			case *ast.InlineFragment:
				d = depth(sel.SelectionSet)
			case *ast.FragmentSpread:
				if v, ok := memo[sel.Name]; ok {
					d = v
				} else if frag := doc.Fragments.ForName(sel.Name); frag != nil && !onPath[sel.Name] {
					onPath[sel.Name] = true
					d = depth(frag.SelectionSet)
					delete(onPath, sel.Name)
					memo[sel.Name] = d
				}
			}
			deepest = max(deepest, d)
		}
		return deepest
	}
	for _, op := range doc.Operations {
		if d := depth(op.SelectionSet); d > maxDepth {
			var locs []gqlerror.Location
			if op.Position != nil {
				locs = []gqlerror.Location{{Line: op.Position.Line, Column: op.Position.Column}}
			}
			e := locatedError(fmt.Sprintf("the query nests fields %d deep, more than the gateway's limit of %d; home { restaurants { menu { name } } } is 4 deep", d, maxDepth), locs, CodeTooDeep)
			return &e
		}
	}
	return nil
}

// pickOperation chooses the operation named name, or the only one when
// name is "".
func pickOperation(doc *ast.QueryDocument, name string) (*ast.OperationDefinition, *Error) {
	fail := func(msg string) (*ast.OperationDefinition, *Error) {
		return nil, &Error{Message: msg, Extensions: map[string]any{"code": CodeUnknownOperation}}
	}
	if name != "" {
		if op := doc.Operations.ForName(name); op != nil {
			return op, nil
		}
		return fail(fmt.Sprintf("operationName %s names no operation in the query; it defines %s", quote(name), operationNames(doc)))
	}
	switch len(doc.Operations) {
	case 0:
		return fail("the query defines no operation; write one, for example { restaurants { name } }")
	case 1:
		return doc.Operations[0], nil
	default:
		return fail(fmt.Sprintf("the query defines %d operations (%s); say which to run with operationName", len(doc.Operations), operationNames(doc)))
	}
}

func operationNames(doc *ast.QueryDocument) string {
	var names []string
	for _, op := range doc.Operations {
		if op.Name == "" {
			names = append(names, "an anonymous one")
			continue
		}
		names = append(names, quote(op.Name))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// coerceVariables checks the JSON variables against the operation's
// declarations and coerces them.
func coerceVariables(op *ast.OperationDefinition, raw map[string]any) (vars map[string]any, e *Error) {
	defer func() {
		if p := recover(); p != nil { // the validator panics on shapes it does not expect
			vars, e = nil, &Error{Message: fmt.Sprintf("variables could not be read: %v", p), Extensions: map[string]any{"code": CodeBadVariables}}
		}
	}()
	if raw == nil {
		raw = map[string]any{}
	}
	if where, why := checkVariableInts(op, raw); where != "" {
		return nil, &Error{Message: fmt.Sprintf("bad value for variable %s: %s", where, why), Extensions: map[string]any{"code": CodeBadVariables}}
	}
	vars, err := validator.VariableValues(schema, op, raw)
	if err == nil {
		return vars, nil
	}
	var ge *gqlerror.Error
	msg := err.Error()
	if errors.As(err, &ge) {
		where := "variables"
		if len(ge.Path) > 1 { // [variable name ...]: drop the leading "variable"
			where = "variable $" + ge.Path[1:].String()
		}
		msg = fmt.Sprintf("bad value for %s: %s", where, ge.Message)
	}
	return nil, &Error{Message: msg, Extensions: map[string]any{"code": CodeBadVariables}}
}

// request is one execution of an operation.
type request struct {
	s      *server
	ctx    context.Context
	doc    *ast.QueryDocument
	vars   map[string]any
	serial bool // a mutation: top-level fields run one after the other

	// authSent is true when the client sent an Authorization header.
	authSent bool
	// user authorizes the request's token once, on first use by a field
	// that needs a user.
	user func() (string, error)
	// restaurantList reads the restaurants once per request.
	restaurantList func() ([]*restaurant, error)

	mu   sync.Mutex
	errs []Error
}

// addError records a field error at path (nil for none), at the position
// of the field in the query.
func (x *request) addError(path []any, pos *ast.Position, err error) {
	e := Error{Message: publicText(err), Path: path, Extensions: map[string]any{"code": ErrorCode(err)}}
	if pos != nil {
		e.Locations = []Location{{Line: pos.Line, Column: pos.Column}}
	}
	x.mu.Lock()
	x.errs = append(x.errs, e)
	x.mu.Unlock()
}

// object is a JSON object whose keys keep the order of the query.
type object struct {
	keys []string
	vals []any
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// fieldGroup is the fields of one response key: { a: name  a: name } or
// the same field selected in two fragments merge into one entry, and their
// sub-selections are executed together.
type fieldGroup struct {
	key    string
	fields []*ast.Field
}

// collectFields flattens sets (fragments, inline fragments, @skip and
// @include) into the response keys of an object of type typeName, in
// query order.
func (x *request) collectFields(typeName string, sets []ast.SelectionSet) []*fieldGroup {
	var groups []*fieldGroup
	byKey := map[string]*fieldGroup{}
	visited := map[string]bool{}
	var walk func(set ast.SelectionSet)
	walk = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch sel := sel.(type) {
			case *ast.Field:
				if !x.included(sel.Directives) {
					continue
				}
				key := sel.Alias
				if key == "" {
					key = sel.Name
				}
				g := byKey[key]
				if g == nil {
					g = &fieldGroup{key: key}
					byKey[key] = g
					groups = append(groups, g)
				}
				g.fields = append(g.fields, sel)
			case *ast.InlineFragment:
				if x.included(sel.Directives) && (sel.TypeCondition == "" || sel.TypeCondition == typeName) {
					walk(sel.SelectionSet)
				}
			case *ast.FragmentSpread:
				if visited[sel.Name] || !x.included(sel.Directives) {
					continue
				}
				visited[sel.Name] = true
				if frag := x.doc.Fragments.ForName(sel.Name); frag != nil && frag.TypeCondition == typeName {
					walk(frag.SelectionSet)
				}
			}
		}
	}
	for _, set := range sets {
		walk(set)
	}
	return groups
}

// included applies @skip(if:) and @include(if:) with the request's
// variables.
func (x *request) included(dirs ast.DirectiveList) bool { return included(dirs, x.vars) }

// included reports whether @skip(if:) and @include(if:) in dirs keep a
// selection, given the coerced variables vars.
func included(dirs ast.DirectiveList, vars map[string]any) bool {
	if d := dirs.ForName("skip"); d != nil {
		if v, _ := directiveIf(d, vars); v {
			return false
		}
	}
	if d := dirs.ForName("include"); d != nil {
		if v, ok := directiveIf(d, vars); ok && !v {
			return false
		}
	}
	return true
}

func directiveIf(d *ast.Directive, vars map[string]any) (v bool, ok bool) {
	if a := d.Arguments.ForName("if"); a != nil {
		val, err := a.Value.Value(vars)
		if err == nil {
			v, ok = val.(bool)
		}
	}
	return v, ok
}

// introspectionRoot reports whether name is a root introspection field,
// whose selections the depth and cost limits do not count.
func introspectionRoot(name string) bool { return name == "__schema" || name == "__type" }

// executeSelections resolves the fields of one object of type typeName
// (parent is what the resolvers of those fields receive). Fields whose
// resolver calls another service run concurrently, except at the top of a
// mutation, where the spec asks for one after the other. It returns nil
// when a non-null field came back null, so the null propagates to the
// nearest nullable parent; the error is already recorded.
func (x *request) executeSelections(ctx context.Context, typeName string, sets []ast.SelectionSet, parent any, path []any) any {
	groups := x.collectFields(typeName, sets)
	obj := &object{keys: make([]string, len(groups)), vals: make([]any, len(groups))}
	serial := x.serial && path == nil
	var wg sync.WaitGroup
	for i, g := range groups {
		obj.keys[i] = g.key
		p := appendPath(path, g.key)
		run := func() { obj.vals[i] = x.executeField(ctx, typeName, g, parent, p) }
		if !serial && remote[typeName+"."+g.fields[0].Name] {
			wg.Go(x.guard(p, g.fields[0].Position, run))
		} else {
			run()
		}
	}
	wg.Wait()
	for i, g := range groups {
		if obj.vals[i] == nil && g.fields[0].Definition != nil && g.fields[0].Definition.Type.NonNull {
			return nil
		}
	}
	return obj
}

// guard wraps fn, run on its own goroutine, so that a panic in it (a bug
// in the executor; resolver panics are caught closer, in callResolver)
// nulls the value at path with an INTERNAL error instead of crashing the
// process: the handler's own recover cannot see other goroutines.
func (x *request) guard(path []any, pos *ast.Position, fn func()) func() {
	return func() {
		defer func() {
			if p := recover(); p != nil {
				x.addError(path, pos, &codedError{code: CodeInternal, msg: "internal error in the gateway at " + pathString(path)})
			}
		}()
		fn()
	}
}

// appendPath returns a new path; paths are shared by goroutines and must
// never be appended to in place.
func appendPath(path []any, el any) []any {
	out := make([]any, len(path), len(path)+1)
	copy(out, path)
	return append(out, el)
}

// executeField resolves one response key and completes its value. A nil
// result is null; when the field is non-null the caller propagates it.
func (x *request) executeField(ctx context.Context, typeName string, g *fieldGroup, parent any, path []any) any {
	f := g.fields[0]
	if f.Name == "__typename" {
		return typeName
	}
	if err := ctx.Err(); err != nil { // the client left: do no more work for it
		x.addError(path, f.Position, describe(ctx, typeName, f.Name, err))
		return nil
	}
	if f.Definition == nil { // validation prevents this
		x.addError(path, f.Position, &codedError{code: CodeInternal, msg: fmt.Sprintf("field %s.%s is not in the schema", typeName, f.Name)})
		return nil
	}
	resolve := resolvers[typeName+"."+f.Name]
	if resolve == nil {
		msg := fmt.Sprintf("field %s.%s is not implemented by this gateway", typeName, f.Name)
		x.addError(path, f.Position, &codedError{code: CodeInternal, msg: msg})
		return nil
	}
	val, err := x.callResolver(ctx, resolve, typeName, f, parent)
	if err != nil {
		x.addError(path, f.Position, describe(ctx, typeName, f.Name, err))
		// A fallback's value is served beside its error (lab 07).
		if val == nil || !fromFallback(err) {
			return nil
		}
	}
	v, _ := x.complete(ctx, f.Definition.Type, g, path, val)
	return v
}

// callResolver runs resolve and turns a panic into an INTERNAL error, so a
// bug in one field (or in a dependency's client) costs that field only.
func (x *request) callResolver(ctx context.Context, resolve resolver, typeName string, f *ast.Field, parent any) (val any, err error) {
	defer func() {
		if p := recover(); p != nil {
			logs.From(ctx).ErrorContext(ctx, "panic in a resolver, kept from the client", "field", typeName+"."+f.Name, "panic", fmt.Sprint(p),
				"request_id", fooddelivery.RequestIDFrom(ctx))
			val, err = nil, &codedError{code: CodeInternal, msg: fmt.Sprintf("internal error while resolving %s.%s; the rest of the response is fine", typeName, f.Name)}
		}
	}()
	return resolve(ctx, x, parent, f.ArgumentMap(x.vars))
}

// describe gives a resolver error its message for people: the gateway's
// own errors keep theirs; dependency errors say which field failed and
// why; unexpected errors are not shown (they may carry internals).
//
// What is not shown is logged on the request's logger (logs.From), with
// the field and the request's trace: an unexpected error at error (a bug
// to fix), the failure behind a dependency's error or behind a fallback
// at info (the system working as designed, which a demo at the default
// level warn need not hear about).
func describe(ctx context.Context, typeName, field string, err error) error {
	var ce *codedError
	if errors.As(err, &ce) {
		return err
	}
	var fe *FallbackError
	if errors.As(err, &fe) {
		if fe.Err != nil {
			logs.From(ctx).InfoContext(ctx, "failure covered by a fallback", "field", typeName+"."+field, "code", fe.code(),
				"error", fe.Err.Error(), "request_id", fooddelivery.RequestIDFrom(ctx))
		}
		return &codedError{code: fe.code(), msg: fe.message(), err: fe.Err}
	}
	code := ErrorCode(err)
	if code == CodeInternal {
		logs.From(ctx).ErrorContext(ctx, "internal error kept from the client", "field", typeName+"."+field, "error", err.Error(),
			"request_id", fooddelivery.RequestIDFrom(ctx))
		return &codedError{code: code, msg: fmt.Sprintf("internal error while resolving %s.%s", typeName, field)}
	}
	// A refusal is the client's to fix, and a thing not found (or no
	// longer kept) the client's to know: give the dependency's own words,
	// not the chain of calls that carried them.
	var call *fooddelivery.CallError
	if (code == CodeBadRequest || code == CodeNotFound) && errors.As(err, &call) && call.Message != "" {
		return &codedError{code: code, msg: fmt.Sprintf("%s.%s: %s", typeName, field, call.Message)}
	}
	logs.From(ctx).InfoContext(ctx, "dependency failure kept from the client", "field", typeName+"."+field, "code", code,
		"error", err.Error(), "request_id", fooddelivery.RequestIDFrom(ctx))
	return &codedError{code: code, msg: fmt.Sprintf("%s.%s: %s", typeName, field, publicMessages[code]), err: err}
}

// publicText is the message a client gets for a field error err (made by
// describe or by the gateway itself): the message the gateway wrote, a
// fallback's Message, a dependency's words for a refused request. The
// failure underneath, with its internal addresses and Go error chain,
// stays in err.Error() for the logs. An error made neither way gets the
// fixed message of its code, never its own text.
func publicText(err error) string {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.msg
	}
	if msg, ok := publicMessages[ErrorCode(err)]; ok {
		return msg
	}
	return publicMessages[CodeInternal]
}

// complete turns a resolved Go value into its JSON form for typ. ok is
// false when the value is null because of an error already recorded; a
// null in a non-null position is recorded here once and reported as
// (nil, false), so the caller propagates it.
func (x *request) complete(ctx context.Context, typ *ast.Type, g *fieldGroup, path []any, val any) (out any, ok bool) {
	if typ.NonNull {
		inner := *typ
		inner.NonNull = false
		v, ok := x.complete(ctx, &inner, g, path, val)
		if v == nil {
			if ok {
				f := g.fields[0]
				x.addError(path, f.Position, &codedError{code: CodeInternal, msg: fmt.Sprintf("internal error: %s is null but the schema says it cannot be", pathString(path))})
			}
			return nil, false
		}
		return v, true
	}
	if val == nil {
		return nil, true
	}
	if typ.Elem != nil {
		return x.completeList(ctx, typ.Elem, g, path, val)
	}
	def := schema.Types[typ.NamedType]
	if def == nil || (def.Kind != ast.Object) {
		return val, true // scalars: resolvers return string, int or bool
	}
	sets := make([]ast.SelectionSet, 0, len(g.fields))
	for _, f := range g.fields {
		sets = append(sets, f.SelectionSet)
	}
	obj := x.executeSelections(ctx, def.Name, sets, val, path)
	if obj == nil {
		return nil, false
	}
	return obj, true
}

// completeList completes each item of a slice. Items of object type are
// completed concurrently (outside mutations' top level: items are never
// mutations), so the per-restaurant calls of a list run side by side.
func (x *request) completeList(ctx context.Context, elem *ast.Type, g *fieldGroup, path []any, val any) (any, bool) {
	rv := reflect.ValueOf(val)
	if rv.Kind() != reflect.Slice {
		x.addError(path, g.fields[0].Position, &codedError{code: CodeInternal, msg: fmt.Sprintf("internal error: %s should be a list", pathString(path))})
		return nil, false
	}
	n := rv.Len()
	items := make([]any, n)
	def := schema.Types[elem.Name()]
	// Introspection's lists call nothing: they are completed in place.
	parallel := n > 1 && def != nil && def.Kind == ast.Object && !strings.HasPrefix(def.Name, "__")
	var wg sync.WaitGroup
	for i := range n {
		p := appendPath(path, i)
		run := func() { items[i], _ = x.complete(ctx, elem, g, p, rv.Index(i).Interface()) }
		if parallel {
			wg.Go(x.guard(p, g.fields[0].Position, run))
		} else {
			run()
		}
	}
	wg.Wait()
	if elem.NonNull {
		for _, it := range items {
			if it == nil {
				return nil, false
			}
		}
	}
	return items, true
}

func pathString(path []any) string {
	var b strings.Builder
	for i, el := range path {
		switch el := el.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", el)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, el)
		}
	}
	return b.String()
}

// comparePaths orders errors by path: element by element, indices as
// numbers, names as text, a shorter path first. Concurrent fields record
// their errors in any order; sorting makes the response deterministic.
func comparePaths(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ai, aInt := a[i].(int)
		bi, bInt := b[i].(int)
		var c int
		switch {
		case aInt && bInt:
			c = cmp.Compare(ai, bi)
		case aInt:
			c = -1
		case bInt:
			c = 1
		default:
			c = cmp.Compare(fmt.Sprint(a[i]), fmt.Sprint(b[i]))
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// traceFields records on the span in ctx, when it records, the root
// fields the request asked for ("Mutation.placeOrder"), so that a trace
// says what the customer did even when no call left the gateway (a
// breaker that refused the order).
func traceFields(ctx context.Context, root string, groups []*fieldGroup) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	names := make([]string, 0, len(groups))
	for _, g := range groups {
		names = append(names, root+"."+g.fields[0].Name)
	}
	span.SetAttributes(attribute.StringSlice(tracing.AttrGraphQLFields, names))
}
