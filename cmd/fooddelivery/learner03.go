//go:build learner03

package main

import (
	"net/http"
	"time"

	"github.com/gophereats/resilience/internal/compose"
	retries "github.com/gophereats/resilience/labs/03-retries"
)

// Built only with -tags learner03, which go run ./cmd/workshop live 03
// adds: your labs/03-retries code at lab 03's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[3] = compose.Lab03(func(base http.RoundTripper, seed int64, attempts int, baseDelay, maxDelay time.Duration) http.RoundTripper {
		return &retries.Transport{Base: base, Seed: seed, Attempts: attempts, BaseDelay: baseDelay, MaxDelay: maxDelay}
	})
}
