package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// experimentTest matches a lab's experiment test, the one that prints a
// score card.
var experimentTest = regexp.MustCompile(experimentPattern)

// gameScore is the score a lab's experiment printed on its score card
// (lab 10, the game day): 0-100 for the learner's plan ("yours"), the
// starter's and the reference's, on one seed.
type gameScore struct {
	Yours     int `json:"yours"`
	Starter   int `json:"starter"`
	Reference int `json:"reference"`
	Seed      int `json:"seed"`
}

// scoreLine matches the last line of the game day's score card, as
// gameday.ScoreLine writes it:
//
//	The game day's score: yours 83 of 100 (starter 59, reference 100; seed 7)
var scoreLine = regexp.MustCompile(`^\s*The game day's score: yours (\d{1,3}) of 100 \(starter (\d{1,3}), reference (\d{1,3}); seed (\d+)\)\s*$`)

// score returns the score the lab's experiment printed, if it did: the
// last score line of the experiment test that follows a score card's
// heading. A line printed by another test, or before the card, does not
// count (a learner's code that prints one is not the card). The class
// table trusts the learners' files as they hand them in: this keeps a
// stray line from scoring, not a determined learner from forging.
func (o labOutcome) score() (gameScore, bool) {
	if o.pkg == nil {
		return gameScore{}, false
	}
	var s gameScore
	found := false
	for name, t := range o.pkg.Tests {
		if !experimentTest.MatchString(name) {
			continue
		}
		inCard := false
		for _, line := range t.Output {
			if strings.HasPrefix(strings.TrimSpace(line), scoreCardHeading) {
				inCard = true
				continue
			}
			m := scoreLine.FindStringSubmatch(line)
			if m == nil || !inCard {
				continue
			}
			inCard = false
			n := make([]int, 4)
			for i := range n {
				n[i], _ = strconv.Atoi(m[i+1])
			}
			s, found = gameScore{Yours: n[0], Starter: n[1], Reference: n[2], Seed: n[3]}, true
		}
	}
	return s, found
}

// String is the score as status and check print it.
func (s gameScore) String() string {
	return fmt.Sprintf("game day score %d of 100 (starter %d, reference %d; seed %d)", s.Yours, s.Starter, s.Reference, s.Seed)
}
