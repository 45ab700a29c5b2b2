package repo

import (
	"errors"
	"fmt"
)

// ErrUsage reports bad arguments; main prints the usage and exits 2.
var ErrUsage = errors.New("usage")

// ErrFailed reports that the command ran and found failures it has already
// printed; main exits 1 without another message.
var ErrFailed = errors.New("failed")

// UsageError is a command line the tool cannot run; main prints what was
// wrong, then the usage, and exits 2.
type UsageError struct{ Msg string }

// Error is what was wrong with the command line.
func (e *UsageError) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrUsage) true for every UsageError.
func (e *UsageError) Is(target error) bool { return target == ErrUsage }

// BadUsage returns a UsageError saying what was wrong.
func BadUsage(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}
