// Package term writes a command's output to a terminal or to a file or
// pipe alike: on a terminal, Progress keeps one status line below the
// output that it redraws every second ("3 of 9 labs done; building and
// testing 04 05"); elsewhere it writes the output only, so that what a
// program reads or CI saves is the text a person sees, without the status.
//
// It knows nothing of the workshop.
package term
