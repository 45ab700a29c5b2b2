package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestInOrderPrintsInOrderWhateverFinishesFirst(t *testing.T) {
	names := []string{"01-a", "02-b", "03-c", "10-game-day"}
	started := make(chan struct{}, len(names))
	allStarted := make(chan struct{})
	go func() {
		for range names {
			<-started
		}
		close(allStarted)
	}()
	check := func(ctx context.Context, i int, r *report) error {
		started <- struct{}{}
		select { // every check runs at once: none finishes before all began
		case <-allStarted:
		case <-time.After(time.Minute):
			return errors.New("the checks did not run side by side")
		}
		if i == 0 {
			time.Sleep(10 * time.Millisecond) // the first finishes last
		}
		fmt.Fprintf(r.w, "\nLab %s\n", names[i])
		r.note("git unavailable: the starter clauses are skipped")
		r.ok(names[i] + " clause 1")
		if names[i] == "02-b" {
			r.fail(names[i]+" clause 2", "too long", nil)
		}
		return nil
	}
	var out bytes.Buffer
	r := &report{w: &out}
	if err := inOrder(context.Background(), r, len(names), check); err != nil {
		t.Fatal(err)
	}
	want := "\nLab 01-a\nnote git unavailable: the starter clauses are skipped\n" +
		"ok   01-a clause 1\n\nLab 02-b\nok   02-b clause 1\nFAIL 02-b clause 2: too long\n\nLab 03-c\nok   03-c clause 1\n\nLab 10-game-day\nok   10-game-day clause 1\n"
	if got := out.String(); got != want {
		t.Errorf("inOrder wrote\n%s\nwant the checks in order, the note once:\n%s", got, want)
	}
	if r.passed != 4 || r.failed != 1 {
		t.Errorf("counts %d passed, %d failed; want 4 and 1", r.passed, r.failed)
	}

	boom := errors.New("disk full")
	err := inOrder(context.Background(), &report{w: &bytes.Buffer{}}, len(names), func(ctx context.Context, i int, r *report) error {
		if i == 1 {
			return boom
		}
		if i > 1 {
			<-ctx.Done() // those after it are cancelled
			return ctx.Err()
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("a check that cannot go on gave %v; want its error", err)
	}
}
