// Package readmetables holds tests, run by `go run ./cmd/workshop verify`,
// that keep the reference tables in the labs' README files in agreement
// with what the reference solutions measure. They run against solutions/,
// never against a learner's code. The package has no code of its own.
package readmetables
