package gateway

import (
	"fmt"
	"math"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/core"
)

// The GraphQL specification's Int is a signed 32-bit integer (section
// 3.5.1, "Int"), and input coercion must refuse anything else as a
// request error. gqlparser checks that an Int is written as an integer but
// not that it fits, in the query text or in JSON variables; these checks
// add the range, so an out-of-range Int is refused before anything runs,
// at its place in the query or the variables.

func intProblem(shown string) string {
	return fmt.Sprintf("%s is not an Int: a GraphQL Int is a whole number from %d to %d", shown, math.MinInt32, math.MaxInt32)
}

// refuseOutOfRangeInts is a validation rule: an Int literal in the query
// must fit in 32 bits.
var refuseOutOfRangeInts = core.Rule{
	Name: "RefuseOutOfRangeInts",
	RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
		observers.OnValue(func(_ *core.Walker, v *ast.Value) {
			if v.Kind != ast.IntValue || v.ExpectedType == nil || v.ExpectedType.Name() != "Int" {
				return
			}
			if _, err := strconv.ParseInt(v.Raw, 10, 32); err != nil {
				shown := v.Raw
				if len(shown) > 40 {
					shown = fmt.Sprintf("%s... (%d digits)", shown[:40], len(shown))
				}
				addError(core.Message("%s", intProblem(shown)), core.At(v.Position))
			}
		})
	},
}

// checkVariableInts returns where and why a JSON variable of op given for
// an Int does not fit in 32 bits or is not whole ("$in.items[0].quantity",
// "3000000000 is not an Int: ..."), or "" when every one fits. raw holds
// the variables as decoded from JSON (numbers are float64).
func checkVariableInts(op *ast.OperationDefinition, raw map[string]any) (where, why string) {
	var check func(t *ast.Type, v any, path string) (string, string)
	check = func(t *ast.Type, v any, path string) (string, string) {
		if v == nil {
			return "", ""
		}
		if t.Elem != nil {
			list, ok := v.([]any)
			if !ok { // a single value given for a list is a list of one
				return check(t.Elem, v, path)
			}
			for i, el := range list {
				if w, y := check(t.Elem, el, fmt.Sprintf("%s[%d]", path, i)); w != "" {
					return w, y
				}
			}
			return "", ""
		}
		if t.NamedType == "Int" {
			if f, ok := v.(float64); ok && (f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32) {
				return path, intProblem(strconv.FormatFloat(f, 'f', -1, 64))
			}
			return "", ""
		}
		def := schema.Types[t.NamedType]
		obj, ok := v.(map[string]any)
		if def == nil || def.Kind != ast.InputObject || !ok {
			return "", ""
		}
		for _, f := range def.Fields {
			if w, y := check(f.Type, obj[f.Name], path+"."+f.Name); w != "" {
				return w, y
			}
		}
		return "", ""
	}
	for _, d := range op.VariableDefinitions {
		if w, y := check(d.Type, raw[d.Variable], "$"+d.Variable); w != "" {
			return w, y
		}
	}
	return "", ""
}
