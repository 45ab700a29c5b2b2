package lab

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
)

// experimentTest matches a lab's experiment test, the one that prints a
// score card.
var experimentTest = regexp.MustCompile(gotest.ExperimentPattern)

// Score is the score a lab's experiment printed on its score card
// (lab 10, the game day): 0-100 for the learner's plan ("yours"), the
// starter's and the reference's, on one seed.
type Score struct {
	Yours     int `json:"yours"`
	Starter   int `json:"starter"`
	Reference int `json:"reference"`
	Seed      int `json:"seed"`
}

// Score returns the score the lab's experiment printed, if it did: the
// last score line of the experiment test that follows a score card's
// heading. A line printed by another test, or before the card, does not
// count (a learner's code that prints one is not the card). The class
// table trusts the learners' files as they hand them in: this keeps a
// stray line from scoring, not a determined learner from forging.
func (o Outcome) Score() (Score, bool) {
	if o.Pkg == nil {
		return Score{}, false
	}
	var s Score
	found := false
	for name, t := range o.Pkg.Tests {
		if !experimentTest.MatchString(name) {
			continue
		}
		inCard := false
		for _, line := range t.Output {
			if strings.HasPrefix(strings.TrimSpace(line), gotest.ScoreCardHeading) {
				inCard = true
				continue
			}
			m := gotest.ScoreLine.FindStringSubmatch(line)
			if m == nil || !inCard {
				continue
			}
			inCard = false
			n := make([]int, 4)
			for i := range n {
				n[i], _ = strconv.Atoi(m[i+1])
			}
			s, found = Score{Yours: n[0], Starter: n[1], Reference: n[2], Seed: n[3]}, true
		}
	}
	return s, found
}

// String is the score as status and check print it.
func (s Score) String() string {
	return fmt.Sprintf("game day score %d of 100 (starter %d, reference %d; seed %d)", s.Yours, s.Starter, s.Reference, s.Seed)
}
