// Package contract is the maintainer's check of the lab contract, the
// numbered clauses of CONTRIBUTING.md: verify runs every clause on every
// lab (the pinned starter fails each step and tells its story, the
// reference passes, each mutant is caught by the step it names, the layout,
// README and HINTS.md keep their shape), builds the running system with
// every starter's learner code, then checks the project (go vet, gofmt,
// go test, the browser tests and the benchmarks). mutant shows one mutant
// as a diff and tests it. The clause table (contract) and CONTRIBUTING.md
// are checked against each other.
//
// It must not know the class export (package class). It uses the
// learner's step printer (learner.PrintSteps) so that mutant shows a run
// as check does.
package contract
