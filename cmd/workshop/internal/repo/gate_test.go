package repo

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestGateAdmitsHighestPriorityFirst: with its one place taken, a gate
// admits the waiters by priority, then in the order they came; a waiter
// whose context ends leaves the line.
func TestGateAdmitsHighestPriorityFirst(t *testing.T) {
	g := NewGate(1)
	ctx := context.Background()
	if err := g.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	admitted := make(chan string, 4)
	wait := func(name string, ctx context.Context) {
		g.mu.Lock()
		before := g.seq
		g.mu.Unlock()
		go func() {
			if g.acquire(ctx) == nil {
				admitted <- name
			}
		}()
		// Let it queue before the next one comes.
		for deadline := time.Now().Add(time.Minute); ; {
			g.mu.Lock()
			queued := g.seq > before
			g.mu.Unlock()
			if queued || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	wait("low", ctx)
	wait("cancelled", WithPriority(gone, 5))
	wait("high", WithPriority(ctx, 2))
	wait("middle", WithPriority(ctx, 1))
	cancel()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		n := len(g.waiting)
		g.mu.Unlock()
		if n == 3 || time.Now().After(deadline) {
			break
		}
	}
	var order []string
	for range 3 {
		g.release()
		select {
		case name := <-admitted:
			order = append(order, name)
		case <-time.After(time.Minute):
			t.Fatalf("nobody admitted after %v", order)
		}
	}
	if want := []string{"high", "middle", "low"}; !slices.Equal(order, want) {
		t.Errorf("admitted %v, want %v (the cancelled waiter never)", order, want)
	}
	g.release()
	if g.free != 1 || len(g.waiting) != 0 {
		t.Errorf("after every release: %d free, %d waiting; want 1 and 0", g.free, len(g.waiting))
	}
}

// TestNilGateAdmitsAll: a Workspace without a gate runs everything at once.
func TestNilGateAdmitsAll(t *testing.T) {
	var g *Gate
	for range 3 {
		if err := g.acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	g.release()
}
