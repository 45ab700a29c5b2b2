package readmetables_test

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/contention"
	retries "github.com/gophereats/resilience/solutions/03-retries"
)

// The experiment of labs/03-retries/experiment_test.go: 100 clients, the
// mean of seeds 1..10.
const (
	lab03Clients = 100
	lab03Runs    = 10
)

// lab03Row matches a row of the README's experiment table, for example
// "full jitter (yours)           794        4.74s   (796 calls, 4.9s)".
var lab03Row = regexp.MustCompile(`^(no backoff|exponential|decorrelated jitter|equal jitter|full jitter)(?: \(yours\))?\s+(\d+)\s+(\S+)\s`)

func TestLab03ExperimentTableMatchesTheReference(t *testing.T) {
	f, err := os.Open("../../labs/03-retries/README.md")
	if err != nil {
		t.Fatalf("lab 03 README: %v", err)
	}
	defer f.Close()
	type row struct {
		calls      float64
		completion time.Duration
	}
	published := map[string]row{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := lab03Row.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		calls, err1 := strconv.ParseFloat(m[2], 64)
		completion, err2 := time.ParseDuration(m[3])
		if err1 != nil || err2 != nil {
			t.Fatalf("lab 03 README: cannot read the row %q", sc.Text())
		}
		published[m[1]] = row{calls, completion}
	}

	rows := contention.Compare(lab03Clients, lab03Runs, func(attempt int, _ time.Duration, r float64) time.Duration {
		return retries.Backoff(attempt, contention.Base, contention.Cap, r)
	})
	for _, r := range rows {
		p, ok := published[r.Name]
		if !ok {
			t.Errorf("lab 03 README: the experiment table has no row %q", r.Name)
			continue
		}
		if d := p.calls/r.Measured.Calls - 1; d > 0.02 || d < -0.02 {
			t.Errorf("lab 03 README: %s shows %.0f write calls; the reference solution measures %.0f (more than 2%% apart)",
				r.Name, p.calls, r.Measured.Calls)
		}
		if d := float64(p.completion)/float64(r.Measured.Completion) - 1; d > 0.05 || d < -0.05 {
			t.Errorf("lab 03 README: %s shows completion %v; the reference solution measures %v (more than 5%% apart)",
				r.Name, p.completion, r.Measured.Completion.Round(10*time.Millisecond))
		}
	}
}
