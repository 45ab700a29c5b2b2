package contract

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
)

func TestVerifyLabsPrintsInLabOrderWhateverFinishesFirst(t *testing.T) {
	labs := []lab.Lab{{Name: "01-a", Present: true}, {Name: "02-b", Present: true}, {Name: "03-c", Present: true}, {Name: "10-game-day", Present: true}}
	var running, most atomic.Int32
	var started []string
	startedCh := make(chan string, len(labs))
	othersDone := make(chan struct{}, len(labs))
	check := func(ctx context.Context, r *report, l lab.Lab) error {
		startedCh <- l.Name
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if l.Name == "10-game-day" {
			// The capstone, started first, finishes last: after the
			// others, which the second worker checks meanwhile.
			for range len(labs) - 1 {
				select {
				case <-othersDone:
				case <-time.After(time.Minute):
					return errors.New("the other labs did not run beside the capstone")
				}
			}
		} else {
			defer func() { othersDone <- struct{}{} }()
		}
		r.note("git unavailable: the starter clauses are skipped")
		r.ok(l.Name + " clause 1")
		if l.Name == "02-b" {
			r.fail(l.Name+" clause 2", "too long", nil)
		}
		return nil
	}
	var out bytes.Buffer
	r := &report{w: &out}
	err := verifyLabs(context.Background(), &out, r, labs, func(l lab.Lab) bool { return l.Name == "10-game-day" }, check)
	if err != nil {
		t.Fatal(err)
	}
	close(startedCh)
	for name := range startedCh {
		started = append(started, name)
	}
	want := "note git unavailable: the starter clauses are skipped\n" +
		"ok   01-a clause 1\n\nLab 02-b\nok   02-b clause 1\nFAIL 02-b clause 2: too long\n\nLab 03-c\nok   03-c clause 1\n\nLab 10-game-day\nok   10-game-day clause 1\n"
	if got := out.String(); got != "\nLab 01-a\n"+want {
		t.Errorf("verifyLabs wrote\n%s\nwant the labs in order, the note once:\n%s", got, "\nLab 01-a\n"+want)
	}
	if r.passed != 4 || r.failed != 1 {
		t.Errorf("counts %d passed, %d failed; want 4 and 1", r.passed, r.failed)
	}
	if started[0] != "10-game-day" {
		t.Errorf("labs started in the order %v; want the capstone first", started)
	}
	if most.Load() != labWorkers {
		t.Errorf("at most %d labs ran at once; want %d side by side", most.Load(), labWorkers)
	}

	boom := errors.New("disk full")
	err = verifyLabs(context.Background(), &bytes.Buffer{}, &report{w: &bytes.Buffer{}}, labs, func(lab.Lab) bool { return false },
		func(ctx context.Context, r *report, l lab.Lab) error {
			if l.Name == "02-b" {
				return boom
			}
			return nil
		})
	if !errors.Is(err, boom) {
		t.Errorf("a lab that cannot be checked gave %v; want its error", err)
	}
}
