package repo

import (
	"errors"
	"fmt"
)

// errUsage reports bad arguments; main prints the usage and exits 2.
var ErrUsage = errors.New("usage")

// errFailed reports that the command ran and found failures it has already
// printed; main exits 1 without another message.
var ErrFailed = errors.New("failed")

// usageError is a command line the tool cannot run; main prints what was
// wrong, then the usage, and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func (e *UsageError) Is(target error) bool { return target == ErrUsage }

// badUsage returns a usageError saying what was wrong.
func BadUsage(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}
