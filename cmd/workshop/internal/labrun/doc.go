// Package labrun runs the tests of several labs in one `go test -json`
// and hands each lab's outcome to its caller as soon as that lab's test
// binary finishes, and keeps a status cache under the user's cache
// directory, so that labs whose files, tests and dependencies have not
// changed since the last run are shown at once without running again.
//
// It knows how to run and cache a lab's tests, not what to print about
// them: that is the learner's commands' (package learner) and the class
// export's (package class).
package labrun
