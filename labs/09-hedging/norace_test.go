//go:build !race

package hedging_test

const raceEnabled = false
