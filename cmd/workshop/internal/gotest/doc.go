// Package gotest reads the event stream of `go test -json` (cmd/test2json's
// format, with the build events of Go 1.24 and later) into a Run: per
// package, whether it built, its build errors, and per top-level test its
// result and output, subtests folded in. Parser reads the stream a line at
// a time, so that a caller can show each package as soon as it finishes.
// FailureLines picks out a failed test's own words from the output.
//
// It knows the shape of test output only, and the few names the lab
// contract gives it (ExperimentPattern, the score card's ScoreCardHeading
// and ScoreLine, which the tests print): not the repository, not labs or
// their steps (package lab maps tests to steps), not how go test is run
// (package repo does that).
package gotest
