package main

import (
	"errors"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/internal/compose"
)

// noLearner is a build without learner code (no learnerNN tag).
func noLearner(int) bool { return false }

// only is a build with the learner code of the labs given.
func only(labs ...int) func(int) bool {
	return func(n int) bool {
		for _, l := range labs {
			if l == n {
				return true
			}
		}
		return false
	}
}

// choices lists a plan's choices from lab 01 to 09, as the flags write them.
func choices(p plan) string {
	var out []string
	for n := 1; n <= 9; n++ {
		out = append(out, p.choice[n].String())
	}
	return strings.Join(out, " ")
}

func TestEveryLabHasASolutionAndItsRow(t *testing.T) {
	for n := 1; n <= 9; n++ {
		assert.NotNil(t, compose.Solutions[n], "lab %02d has no solution registered in solutions.go", n)
		assert.Equal(t, n, row(n).num, "labRows[%d] is not lab %02d", n-1, n)
	}
}

func TestLabFlagsResolveInOrder(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		want  string // choices of labs 01..09
	}{
		{"no flag leaves every lab off", nil, "off off off off off off off off off"},
		{"one lab", []string{"05=solution"}, "off off off off solution off off off off"},
		{"a lab written as 5 or by its directory", []string{"5=naive", "06-bulkhead=solution"}, "off off off off naive solution off off off"},
		{"all sets every lab", []string{"all=naive"}, "naive naive naive naive naive naive naive naive naive"},
		{"a later lab overrides all", []string{"all=solution", "05=naive", "09=off"},
			"solution solution solution solution naive solution solution solution off"},
		{"a later all overrides an earlier lab", []string{"05=naive", "all=off"}, "off off off off off off off off off"},
		{"the last value for a lab wins", []string{"01=naive", "01=solution"}, "solution off off off off off off off off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := resolve(tt.flags, noLearner)
			require.NoError(t, err)
			assert.Equal(t, tt.want, choices(p))
		})
	}
}

func TestBadLabFlagsSayWhatToWriteInstead(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		have  func(int) bool
		says  []string
	}{
		{"the old form without a lab", []string{"solution"}, noLearner,
			[]string{"-lab solution", "name the lab", "-lab 01=solution", "-lab all=solution"}},
		{"no lab and no choice", []string{"breaker"}, noLearner, []string{"want NN=choice", "-lab 05=solution"}},
		{"a lab that does not exist", []string{"10=solution"}, noLearner, []string{"no lab \"10\"", "01 to 09"}},
		{"a choice that does not exist", []string{"05=fixed"}, noLearner, []string{"\"fixed\" is not a choice", "off, naive, solution or learner"}},
		{"a learner lab this build leaves out", []string{"05=learner"}, noLearner,
			[]string{"labs/05-breaker", "go run ./cmd/workshop live 05"}},
		{"a learner lab this build leaves out, though it has others", []string{"all=solution", "05=learner"}, only(6),
			[]string{"go run ./cmd/workshop live 05"}},
		{"every lab as learner in a build with no learner code", []string{"all=learner"}, noLearner,
			[]string{"-lab all=learner", "go run ./cmd/workshop live"}},
		{"labs 03 and 04 named together", []string{"03=solution", "04=solution"}, noLearner,
			[]string{"-lab 03=solution and lab 04 (solution) both retry the charge", "one retry layer at the payment edge", "-lab 04=off"}},
		{"lab 03 named with lab 04 from all", []string{"all=naive", "03=learner"}, only(3),
			[]string{"-lab 03=learner and lab 04 (naive) both retry the charge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolve(tt.flags, tt.have)
			var ue *usageError
			require.True(t, errors.As(err, &ue), "resolve %q: got %v, want a usage error", tt.flags, err)
			for _, want := range tt.says {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestOneLabRetriesTheCharge(t *testing.T) {
	t.Run("all=solution: lab 04 retries, lab 08 keeps its keys, lab 03 is not plugged", func(t *testing.T) {
		p, err := resolve([]string{"all=solution"}, noLearner)
		require.NoError(t, err)
		assert.Equal(t, 4, p.retrier)
		assert.False(t, p.on(3), "lab 03's transport would be a second retry layer")
		assert.Contains(t, p.plugged(3), "not plugged: lab 04 retries the charge")
		assert.True(t, p.on(8))
		assert.Contains(t, p.plugged(8), "without its own charge retries: lab 04 retries the charge")
	})
	t.Run("labs 03 and 08: lab 03's transport retries the keyed charge", func(t *testing.T) {
		p, err := resolve([]string{"03=solution", "08=solution"}, noLearner)
		require.NoError(t, err)
		assert.Equal(t, 3, p.retrier)
		assert.True(t, p.on(3))
		assert.Contains(t, p.plugged(8), "lab 03 retries the charge")
	})
	t.Run("lab 08 alone retries with its own policy", func(t *testing.T) {
		p, err := resolve([]string{"08=naive"}, noLearner)
		require.NoError(t, err)
		assert.Equal(t, 8, p.retrier)
		assert.NotContains(t, p.plugged(8), "retries the charge (one retry layer)")
	})
	t.Run("no retrying lab", func(t *testing.T) {
		p, err := resolve([]string{"05=solution"}, noLearner)
		require.NoError(t, err)
		assert.Zero(t, p.retrier)
	})
}

func TestAllLearnerRunsTheLearnerCodeThatIsBuiltIn(t *testing.T) {
	p, err := resolve([]string{"all=learner"}, only(5, 9))
	require.NoError(t, err)
	assert.Equal(t, "off off off off learner off off off learner", choices(p),
		"labs without learner code in the build stay off")
	assert.Contains(t, p.plugged(1), "go run ./cmd/workshop live 01", "the banner says how to build lab 01's code in")
}

func TestBannerListsWhatRunsAtEveryLab(t *testing.T) {
	p, err := resolve([]string{"all=solution", "01=naive", "09=off"}, noLearner)
	require.NoError(t, err)
	out := banner("http://127.0.0.1:8080/graphql", options{plan: p, orderLimit: 100})
	lines := strings.Split(out, "\n")
	for _, l := range labRows {
		var found string
		for _, line := range lines {
			if strings.HasPrefix(line, "  "+l.id()+" "+l.title()+" ") {
				found = line
			}
		}
		require.NotEmpty(t, found, "the banner should have a line for lab %s %s; it is:\n%s", l.id(), l.title(), out)
		assert.Contains(t, found, " "+p.choice[l.num].String()+" ", "lab %s's line names its choice", l.id())
	}
	for _, want := range []string{
		"01 timeouts       naive     no timeout",
		"02 deadlines      solution  X-Timeout-Ms",
		"03 retries        solution  not plugged: lab 04 retries the charge",
		"09 hedging        off       each read goes to one replica",
		"demo speed:       as the labs teach",
	} {
		assert.Contains(t, out, want)
	}
	if builtIn := slices.ContainsFunc([]int{1, 2, 3, 4, 5, 6, 7, 8, 9}, compose.HaveLearner); builtIn {
		assert.Contains(t, out, "learner code:     labs ", "the banner lists the learner code built in")
	} else {
		assert.Contains(t, out, "learner code:     none built in", "a build without learner tags says so")
	}
	fast := banner("http://127.0.0.1:8080/graphql", options{plan: p, fast: true})
	assert.Contains(t, fast, "-fast: breakers open for 3s")
}

var update = flag.Bool("update", false, "rewrite the README's table of the labs from the code")

// The top README's table of labs at their integration points is written
// from labRows and meetings; go test ./cmd/fooddelivery -update rewrites it.
func TestReadmeTableMatchesTheCode(t *testing.T) {
	const file = "../../README.md"
	const begin, end = "<!-- labs table: go test ./cmd/fooddelivery -update -->\n", "<!-- end of labs table -->\n"
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	text := string(data)
	before, rest, ok := strings.Cut(text, begin)
	require.True(t, ok, "README.md has no line %q", begin)
	_, after, ok := strings.Cut(rest, end)
	require.True(t, ok, "README.md has no line %q", end)
	want := before + begin + "\n" + readmeTable() + "\n" + end + after
	if *update {
		require.NoError(t, os.WriteFile(file, []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, text, "README.md's table of labs is out of date: run go test ./cmd/fooddelivery -update")
}
