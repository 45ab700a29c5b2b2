package gateway_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
)

// A full bulkhead (lab 06) has its own code, even when the refusal also
// says the dependency is overloaded.
func TestErrorCodeBulkheadFull(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("%w: orders has all 10 slots in use", fooddelivery.ErrBulkheadFull),
		errors.Join(fooddelivery.ErrOverloaded, fooddelivery.ErrBulkheadFull),
	} {
		if got := gateway.ErrorCode(err); got != gateway.CodeBulkheadFull {
			t.Errorf("ErrorCode(%v) = %q, want %q", err, got, gateway.CodeBulkheadFull)
		}
	}
}
