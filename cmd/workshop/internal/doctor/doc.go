// Package doctor is the readiness check a learner runs the night before a
// workshop, while they still have a network connection: doctor checks the
// Go version, that every module the labs, the tool and the system need is
// in the module cache (so that the room's patchy Wi-Fi does not matter),
// a C compiler for the race detector, that the gateway's port is free, and
// the free disk for the build cache; then it builds and runs every lab's
// tests once, as status does, so that the first status in the room answers
// from the caches in seconds. It prints one line per check, with the fix
// under each that fails, and fails when the workshop cannot run.
//
// It must not know the learner's loop (package learner), the class export
// (package class) or the lab contract (package contract); running the
// labs' tests comes from package labrun.
package doctor
