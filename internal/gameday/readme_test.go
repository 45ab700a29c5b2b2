package gameday

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery/plan"
	reference "github.com/gophereats/resilience/solutions/10-game-day"
)

// TestReadmeStatesEveryStagesSLOs keeps lab 10's README and the stages'
// limits the same numbers: each step's section names its stage and lists
// every SLO of it as the score card writes it.
func TestReadmeStatesEveryStagesSLOs(t *testing.T) {
	data, err := os.ReadFile("../../labs/10-game-day/README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	for _, s := range Stages {
		heading := "### Step " + string(rune('0'+s.Step)) + ":"
		i := strings.Index(readme, heading)
		if i < 0 {
			t.Errorf("labs/10-game-day/README.md has no %q heading for stage %q", heading, s.Name)
			continue
		}
		section := readme[i+len(heading):]
		if j := strings.Index(section, "\n### "); j >= 0 {
			section = section[:j]
		}
		for _, o := range s.SLOs {
			if !strings.Contains(section, o.String()) {
				t.Errorf("labs/10-game-day/README.md, step %d (%s): the SLO %q is not stated as the tests hold it", s.Step, s.Name, o.String())
			}
		}
	}
}

// TestReferencePlanRunsAndExtremesAreRefused checks the plans the lab
// names: the reference passes plan.Check, and Check names the field of a
// setting the system cannot run.
func TestReferencePlanRunsAndExtremesAreRefused(t *testing.T) {
	if err := reference.Plan().Check(); err != nil {
		t.Fatalf("the reference plan does not run: %v", err)
	}
	bad := reference.Plan()
	bad.Gateway.Hedge.Percentile = 1.5
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "Gateway.Hedge.Percentile") {
		t.Errorf("a hedge percentile of 1.5 gave %v; want an error naming Gateway.Hedge.Percentile", err)
	}
	if err := CheckPlan(plan.Plan{}); err != nil {
		t.Errorf("the zero plan (the system as it is) must run: %v", err)
	}
	limited := reference.Plan()
	limited.Gateway.Limit = 200
	if err := CheckPlan(limited); !errors.Is(err, plan.ErrInvalid) || !strings.Contains(err.Error(), "Gateway.Limit 200") || !strings.Contains(err.Error(), "30") {
		t.Errorf("a plan with Gateway.Limit 200 gave %v; want plan.ErrInvalid naming Gateway.Limit and the platform's 30", err)
	}
	if _, err := Play(limited, Stages[0], 1); err == nil {
		t.Error("Play ran a plan with a Gateway.Limit the platform fixes")
	}
}

// TestReferenceServesAlmostNothingFromFallbacks holds lab 10's README
// statement: with the reference plan and no fault, under the normal load
// and under the rush, under 1% of answers come from a fallback (it
// measures 0.0% on seeds 1, 2, 3 and 7).
func TestReferenceServesAlmostNothingFromFallbacks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as the lab's rig
	for _, rate := range []int{NormalRate, RushRate} {
		synctest.Test(t, func(t *testing.T) {
			s := Stage{Step: 1, Name: "calm", Rate: rate, Phases: []Phase{{Name: "calm", For: 10 * time.Second}},
				SLOs: []SLO{{Measure: FallbackShare, Phase: "calm", Limit: 0.01}}}
			r, err := Play(reference.Plan(), s, ExampleSeed)
			if err != nil {
				t.Fatal(err)
			}
			if v := Judge(s, r)[0]; !v.Met {
				t.Errorf("the reference plan, no fault, %d customers a second: %s of %d answers came from a fallback; the README says under 1%%",
					rate, v.Format(), len(r.Requests))
			}
		})
	}
}

// TestEverySLONamesAPhaseOfItsStage keeps the stages well formed: an SLO
// limits a phase its stage plays (on every seed it is played with, and the
// example seed), or the whole stage.
func TestEverySLONamesAPhaseOfItsStage(t *testing.T) {
	for _, s := range Stages {
		for _, seed := range append([]int64{ExampleSeed}, s.Seeds...) {
			var names []string
			for _, ph := range s.phases(seed) {
				names = append(names, ph.Name)
			}
			for _, o := range s.SLOs {
				if o.Phase != "" && !slices.Contains(names, o.Phase) {
					t.Errorf("stage %s, seed %d: the SLO %q names a phase it does not play (phases %v)", s.Name, seed, o, names)
				}
			}
		}
	}
}

// TestTheCardsStarterIsThePinnedStarter keeps the score card's "starter"
// column honest: the plan lab 10's rig plays as the starter is the plan
// labs/10-game-day/plan.go shipped with (its blob in labs/starters.txt),
// compared as Go expressions, comments aside.
func TestTheCardsStarterIsThePinnedStarter(t *testing.T) {
	manifest, err := os.ReadFile("../../labs/starters.txt")
	if err != nil {
		t.Fatal(err)
	}
	var blob string
	for _, line := range strings.Split(string(manifest), "\n") {
		if id, file, ok := strings.Cut(strings.TrimSpace(line), " "); ok && file == "labs/10-game-day/plan.go" {
			blob = id
		}
	}
	if blob == "" {
		t.Fatal("labs/starters.txt does not pin labs/10-game-day/plan.go")
	}
	pinned, err := exec.Command("git", "cat-file", "blob", blob).Output()
	if err != nil {
		t.Skipf("the pinned starter is not readable without git: %v", err)
	}
	rig, err := os.ReadFile("../../labs/10-game-day/rig_test.go")
	if err != nil {
		t.Fatal(err)
	}
	want, got := returned(t, pinned, "Plan"), returned(t, rig, "starterPlan")
	if want != got {
		t.Errorf("the rig's starterPlan is not the pinned starter's Plan:\nrig:     %s\nstarter: %s", got, want)
	}
}

// returned is the expression function fn of src returns, printed without
// comments.
func returned(t *testing.T, src []byte, fn string) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
			for _, st := range fd.Body.List {
				if r, ok := st.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
					var b strings.Builder
					if err := printer.Fprint(&b, token.NewFileSet(), r.Results[0]); err != nil {
						t.Fatal(err)
					}
					return strings.Join(strings.Fields(b.String()), " ")
				}
			}
		}
	}
	t.Fatalf("no func %s returning one value", fn)
	return ""
}
