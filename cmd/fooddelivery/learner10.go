//go:build learner10

package main

import gameday "github.com/gophereats/resilience/labs/10-game-day"

// Built only with -tags learner10, which go run ./cmd/workshop live 10
// adds: your labs/10-game-day plan, run with -plan learner. Without the
// tag nothing under labs/ is compiled, so a plan you are still writing
// never breaks the system.
func init() {
	plans["learner"] = gameday.Plan
}
