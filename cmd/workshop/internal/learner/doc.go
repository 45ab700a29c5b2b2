// Package learner holds the learner's commands: status and check (each
// lab step by step and the next thing to do), watch (re-run a lab on every
// save, with hint, list and solution typed in), hint (the next hint of the
// first failing step; which hints were shown is remembered under the
// user's cache directory, never in the repository), reset (the pinned
// starter back, the learner's copy saved first), solution (the reference
// against the learner's code, then its notes) and live (the running system
// built with the learner's code).
//
// It must not know the lab contract (package contract) or the class export
// (package class); what a lab is comes from package lab, running its tests
// from package labrun.
package learner
