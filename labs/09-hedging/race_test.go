//go:build race

package hedging_test

// raceEnabled reports whether the tests run under the race detector, which
// makes the experiment's single-goroutine simulation many times slower
// without anything to find in it.
const raceEnabled = true
