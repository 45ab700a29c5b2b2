package gameday

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gophereats/resilience/fooddelivery/plan"
)

// ExampleSeed is the seed of the README's examples and of the score card
// in lab 10's experiment; no stage's tests use it.
const ExampleSeed = 7

// Entry is a named plan on the score card.
type Entry struct {
	Name string
	Plan plan.Plan
}

// Card is the score card: for each plan played, its results of every
// stage.
type Card struct {
	Seed    int64
	names   []string
	results map[string][]Result
}

// Add records the results of plan name, one per stage in Stages' order.
func (c *Card) Add(name string, results []Result) {
	if c.results == nil {
		c.results = map[string][]Result{}
	}
	c.names = append(c.names, name)
	c.results[name] = results
}

// Score is plan name's score from 0 to 100: the mean over the stages of
// the share of each stage's SLOs it met, times 100. Every stage weighs the
// same, whatever its number of SLOs.
func (c *Card) Score(name string) float64 {
	rs := c.results[name]
	if len(rs) == 0 {
		return 0
	}
	var sum float64
	for i, r := range rs {
		met := 0
		vs := Judge(Stages[i], r)
		for _, v := range vs {
			if v.Met {
				met++
			}
		}
		sum += float64(met) / float64(len(vs))
	}
	return 100 * sum / float64(len(rs))
}

// Write prints the card: a row per SLO with each plan's figure (a "!"
// marks a miss), a row per stage with the SLOs each plan met, and the
// score.
func (c *Card) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "The game day's score card (seed %d)\n\n", c.Seed)
	fmt.Fprintf(tw, "stage\tSLO\t%s\n", strings.Join(c.names, "\t"))
	for i, s := range Stages {
		for j, o := range s.SLOs {
			row := []string{s.Name, o.String()}
			if j > 0 {
				row[0] = ""
			}
			for _, name := range c.names {
				v := Judge(s, c.results[name][i])[j]
				cell := v.Format()
				if !v.Met {
					cell += " !"
				}
				row = append(row, cell)
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	row := []string{"score", "100 x mean over stages of SLOs met / SLOs"}
	for _, name := range c.names {
		row = append(row, fmt.Sprintf("%.0f", c.Score(name)))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t"))
	tw.Flush()
}
