package readmetables_test

import (
	"bufio"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/hedgesim"
	hedging "github.com/gophereats/resilience/solutions/09-hedging"
)

// lab09Row matches a row of lab 09's experiment table, for example
// "p95 of last 2000, burst 100       22.1ms    37.5ms    48.7ms    5.1%".
var lab09Row = regexp.MustCompile(`^(no hedging|p95 of last \d+, burst \d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([\d.]+)%$`)

// TestLab09ExperimentTableMatchesTheReference runs the rows of
// labs/09-hedging/README.md's table with the reference tracker and budget,
// as labs/09-hedging/experiment_test.go does, and compares.
func TestLab09ExperimentTableMatchesTheReference(t *testing.T) {
	f, err := os.Open("../../labs/09-hedging/README.md")
	if err != nil {
		t.Fatalf("lab 09 README: %v", err)
	}
	defer f.Close()
	rows := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := lab09Row.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			rows[m[1]] = m[2:]
		}
	}
	policy := func(window, burst int) *hedgesim.Policy {
		return &hedgesim.Policy{
			Tracker: hedging.NewLatencyTracker(window, 0.95, 200*time.Millisecond),
			Budget:  hedging.NewHedgeBudget(0.1, burst),
		}
	}
	m := hedgesim.Default()
	want := map[string]hedgesim.Result{
		"no hedging":                  hedgesim.Run(m, nil),
		"p95 of last 2000, burst 100": hedgesim.Run(m, policy(2000, 100)),
		"p95 of last 200, burst 100":  hedgesim.Run(m, policy(200, 100)),
		"p95 of last 2000, burst 5":   hedgesim.Run(m, policy(2000, 5)),
	}
	for name, r := range want {
		got, ok := rows[name]
		if !ok {
			t.Errorf("lab 09 README: the experiment table has no row %q", name)
			continue
		}
		for i, d := range []time.Duration{r.P50, r.P99, r.P999} {
			published, err := time.ParseDuration(got[i])
			if err != nil || math.Abs(float64(published-d)) > float64(d)/50 {
				t.Errorf("lab 09 README: row %q shows %s, the reference measures %v", name, got[i], d.Round(100*time.Microsecond))
			}
		}
		extra, err := strconv.ParseFloat(got[3], 64)
		if err != nil || math.Abs(extra-100*r.Extra()) > 0.15 {
			t.Errorf("lab 09 README: row %q shows %s%% extra requests, the reference measures %.1f%%", name, got[3], 100*r.Extra())
		}
	}
}
