// Package class is what an instructor gathers from a class: status -json,
// each learner's progress as Exercism's results.json version 3 (Results:
// one test per lab step, with the learner, commit, times and the game
// day's score added), and gather, which reads learners' files, distrusts
// them (wrong version, unknown labs, absurd scores, control characters,
// two files for one name) and prints a learners x labs table and a CSV.
//
// It must not know the learner's loop (package learner) or the lab
// contract (package contract); gather reads only the files it is given
// and needs no repository.
package class
