// Package fuzz holds fuzz tests of the reference solutions' parsers of
// untrusted input: the deadline header of lab 02 (solutions/02-deadlines)
// and Retry-After of lab 03 (solutions/03-retries), checked against the
// fault injector that sends Retry-After (fooddelivery/faults). Solutions
// have no tests of their own (the lab's tests are the spec), so these live
// here. Under `go test` (and so in `go run ./cmd/workshop verify`) every
// seed and every input in testdata/fuzz runs once; see each test file for
// the command that fuzzes it. The package has no code of its own.
package fuzz
