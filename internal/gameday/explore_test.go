package gameday

import (
	"fmt"
	"os"
	"strings"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery/plan"
	ref "github.com/gophereats/resilience/solutions/10-game-day"
	starter "github.com/gophereats/resilience/labs/10-game-day"
)

func TestExplore(t *testing.T) {
	if os.Getenv("EXPLORE") == "" {
		t.Skip()
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	plans := map[string]plan.Plan{"ref": ref.Plan(), "labs": plan.Labs(false), "zero": {}, "start": starter.Plan()}
	v := func(name string, f func(p *plan.Plan)) { p := ref.Plan(); f(&p); plans[name] = p }
	v("nocomp", func(p *plan.Plan) { p.Gateway.Compartments = nil })
	v("bigcomp", func(p *plan.Plan) { p.Gateway.Compartments.Orders = 30 })
	v("small", func(p *plan.Plan) { p.Gateway.Compartments.Menu = 4 })
	v("eager", func(p *plan.Plan) { p.Payment.Breaker = &plan.Breaker{Window: 5, MinCalls: 1, FailureRate: 0.2, OpenFor: 3 * time.Second} })
	v("slow", func(p *plan.Plan) { p.Payment.Breaker = nil })
	v("long", func(p *plan.Plan) { p.Payment.Breaker.OpenFor = 60 * time.Second })
	v("early", func(p *plan.Plan) { p.Gateway.Hedge.Percentile = 0.5; p.Gateway.Hedge.Ratio = 1 })
	v("nohedge", func(p *plan.Plan) { p.Gateway.Hedge = nil })
	v("every", func(p *plan.Plan) { p.Payment.Retries.EveryLayer = true })
	v("nokeys", func(p *plan.Plan) { p.IdempotencyKeys = false })
	v("open", func(p *plan.Plan) { p.Gateway.AuthFailOpen = true })
	v("short", func(p *plan.Plan) { p.Payment.Timeout = 100 * time.Millisecond })
	v("long-timeout", func(p *plan.Plan) { p.Payment.Timeout = 30 * time.Second })
	v("noretry", func(p *plan.Plan) { p.Payment.Retries.Attempts = 1 })
	for _, name := range strings.Split(os.Getenv("EXPLORE"), ",") {
		for _, s := range Stages {
			if only := os.Getenv("STAGE"); only != "" && only != s.Name {
				continue
			}
			synctest.Test(t, func(t *testing.T) {
				seed := s.Seeds[0]
				if e := os.Getenv("SEED"); e != "" {
					fmt.Sscan(e, &seed)
				}
				r, err := Play(plans[name], s, seed)
				if err != nil {
					t.Fatal(err)
				}
				line := fmt.Sprintf("%-5s %-18s n=%4d", name, s.Name, len(r.Requests))
				for _, v := range Judge(s, r) {
					ok := "ok"
					if !v.Met {
						ok = "FAIL"
					}
					line += fmt.Sprintf(" | %s=%s %s", v.SLO, v.Format(), ok)
				}
				fmt.Println(line)
			})
		}
	}
}
