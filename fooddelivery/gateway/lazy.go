package gateway

import "sync/atomic"

// lazy returns a function that calls f on first use and gives its results
// to every caller, like sync.OnceValues. Callers that arrive while f runs
// wait on a channel rather than a mutex: under testing/synctest a goroutine
// blocked on a mutex is not durably blocked, so fake time would stand still
// while the first caller waits for a slow dependency (two fields reading
// one menu, say), and the test would hang in real time. If f panics, the
// panic goes to the first caller and the others get an INTERNAL error.
func lazy[T any](f func() (T, error)) func() (T, error) {
	var started atomic.Bool
	done := make(chan struct{})
	var v T
	var err error
	return func() (T, error) {
		if !started.CompareAndSwap(false, true) {
			<-done
			return v, err
		}
		finished := false
		defer func() {
			if !finished {
				err = &codedError{code: CodeInternal, msg: "internal error while reading a shared value"}
			}
			close(done)
		}()
		v, err = f()
		finished = true
		return v, err
	}
}
