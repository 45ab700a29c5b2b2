package gameday

import (
	"fmt"
	"io"
	"slices"
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
		met, of := metOf(Stages[i], r)
		sum += float64(met) / float64(of)
	}
	return 100 * sum / float64(len(rs))
}

// metOf returns how many of stage s's SLOs r met, and of how many.
func metOf(s Stage, r Result) (met, of int) {
	vs := Judge(s, r)
	for _, v := range vs {
		if v.Met {
			met++
		}
	}
	return met, len(vs)
}

// Write prints the card: a row per SLO with each plan's figure (a "!"
// marks a miss), a row per stage with the SLOs each plan met, two rows
// over every stage that no SLO limits (the share of order lookups
// answered, and the units of work services started after their caller
// had given up), the score, and, when the card has the plans "yours",
// "starter" and "reference", the ScoreLine.
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
		row := []string{"", "SLOs met"}
		for _, name := range c.names {
			met, of := metOf(s, c.results[name][i])
			row = append(row, fmt.Sprintf("%d of %d", met, of))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	// Over the whole day: what no stage's SLO limits, but the card shows.
	track := []string{"every stage", "orders tracked (answered)"}
	for _, name := range c.names {
		n, answered := 0, 0
		for _, r := range c.results[name] {
			for _, q := range r.Requests {
				if flowOf(q.Action) == FlowTrack {
					n++
					if q.Outcome != Failed {
						answered++
					}
				}
			}
		}
		cell := "-"
		if n > 0 {
			cell = format(TrackAvailability, float64(answered)/float64(n))
		}
		track = append(track, cell)
	}
	fmt.Fprintln(tw, strings.Join(track, "\t"))
	for _, service := range []string{"order", "payment"} {
		late := []string{"", "work after the customer left (" + service + ")"}
		for _, name := range c.names {
			var units int64
			for _, r := range c.results[name] {
				units += r.Marks[len(r.Marks)-1].LateWork[service] - r.Marks[0].LateWork[service]
			}
			late = append(late, fmt.Sprintf("%d", units))
		}
		fmt.Fprintln(tw, strings.Join(late, "\t"))
	}
	row := []string{"score", "100 x mean over stages of SLOs met / SLOs"}
	for _, name := range c.names {
		row = append(row, fmt.Sprintf("%.0f", c.Score(name)))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t"))
	fmt.Fprintf(tw, "\ninside\tover the whole stage\t%s\n", strings.Join(c.names, "\t"))
	for i, s := range Stages {
		for j, m := range inside {
			row := []string{s.Name, m.String()}
			if j > 0 {
				row[0] = ""
			}
			for _, name := range c.names {
				row = append(row, format(m, c.results[name][i].Value(SLO{Measure: m})))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	tw.Flush()
	if slices.Contains(c.names, "yours") && slices.Contains(c.names, "starter") && slices.Contains(c.names, "reference") {
		fmt.Fprintf(w, "\n%s\n", ScoreLine(c.Score("yours"), c.Score("starter"), c.Score("reference"), c.Seed))
	}
}

// inside are the measures the card shows for every stage, SLO or not:
// what happened behind the gateway.
var inside = []Measure{CallsPerCheckout, RetriesPerCharge, OrderSlots, PaymentLoad, LateWork}

// ScoreLine is the score card's last line, which the workshop tool reads
// (status shows it, status -json carries it, gather adds it to the class
// table): each score rounded to a whole number, and the seed.
//
//	The game day's score: yours 83 of 100 (starter 59, reference 100; seed 7)
func ScoreLine(yours, starter, reference float64, seed int64) string {
	return fmt.Sprintf("The game day's score: yours %.0f of 100 (starter %.0f, reference %.0f; seed %d)", yours, starter, reference, seed)
}
