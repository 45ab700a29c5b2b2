package learner

import (
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

// raceOutput is what go test -race prints for a race between two calls of
// the learner's Do (paths as on the machine that ran it).
var raceOutput = strings.Split(`==================
WARNING: DATA RACE
Read at 0x00c0000a0198 by goroutine 10:
  github.com/gophereats/resilience/labs/05-breaker.(*CircuitBreaker).Do()
      /home/me/resilience/labs/05-breaker/breaker.go:121 +0x7d
  github.com/gophereats/resilience/labs/05-breaker.TestStep4Trials.func1()
      /home/me/resilience/labs/05-breaker/step4_test.go:13 +0x12

Previous write at 0x00c0000a0198 by goroutine 9:
  sync/atomic.AddInt64()
      /usr/local/go/src/runtime/race_amd64.s:289 +0xb
  github.com/gophereats/resilience/labs/05-breaker.(*CircuitBreaker).record()
      /home/me/resilience/labs/05-breaker/breaker.go:140 +0x8f
  github.com/gophereats/resilience/labs/05-breaker.TestStep4Trials.func1()
      /home/me/resilience/labs/05-breaker/step4_test.go:13 +0x12

Goroutine 10 (running) created at:
  github.com/gophereats/resilience/labs/05-breaker.TestStep4Trials()
      /home/me/resilience/labs/05-breaker/step4_test.go:13 +0x78
==================
    testing.go:1712: race detected during execution of test`, "\n")

func TestCondenseRace(t *testing.T) {
	a, b, ok := condenseRace(raceOutput, "/home/me/resilience", "labs/05-breaker")
	if !ok {
		t.Fatal("no race found")
	}
	want := []raceAccessAt{
		{"read", "(*CircuitBreaker).Do", "labs/05-breaker/breaker.go", "121"},
		{"previous write", "(*CircuitBreaker).record", "labs/05-breaker/breaker.go", "140"},
	}
	if a != want[0] || b != want[1] {
		t.Errorf("got %+v and %+v, want %+v", a, b, want)
	}
	info := lab.Info{Lab: lab.Lab{Name: "05-breaker", Present: true}}
	story := strings.Join(raceStory(info, 4, a, b), "\n")
	for _, s := range []string{"step 4: a data race", "read at labs/05-breaker/breaker.go:121 in (*CircuitBreaker).Do", "previous write at labs/05-breaker/breaker.go:140", "labs/05-breaker/README.md"} {
		if !strings.Contains(story, s) {
			t.Errorf("the story lacks %q:\n%s", s, story)
		}
	}
	if _, _, ok := condenseRace([]string{"    breaker_test.go:12: step 4: 3 calls"}, "/", "labs/05-breaker"); ok {
		t.Error("a failure without a race report was condensed")
	}
}
