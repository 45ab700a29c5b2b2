package repo

import (
	"context"
	"sync"
)

// Gate limits how many go commands a Workspace runs at once, so that a
// command that checks many things side by side (verify) keeps the machine's
// cores busy without running many more go commands than it has cores. Waiting
// runs start highest priority first (see WithPriority), then in the order
// they asked. A nil *Gate admits everything at once.
type Gate struct {
	mu      sync.Mutex
	free    int
	seq     int
	waiting []*gateWaiter
}

type gateWaiter struct {
	prio, seq int
	ready     chan struct{}
}

// NewGate returns a Gate that lets n subprocesses run at once (at least
// one).
func NewGate(n int) *Gate { return &Gate{free: max(n, 1)} }

type priorityKey struct{}

// WithPriority returns a context whose subprocesses a Gate starts before
// those of lower priority (0 when unset): the runs on a long chain of
// work, started first, end it sooner.
func WithPriority(ctx context.Context, prio int) context.Context {
	return context.WithValue(ctx, priorityKey{}, prio)
}

// acquire waits for a free place, or for ctx to end.
func (g *Gate) acquire(ctx context.Context) error {
	if g == nil {
		return nil
	}
	prio, _ := ctx.Value(priorityKey{}).(int)
	g.mu.Lock()
	if g.free > 0 && len(g.waiting) == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	g.seq++
	w := &gateWaiter{prio: prio, seq: g.seq, ready: make(chan struct{})}
	g.waiting = append(g.waiting, w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, o := range g.waiting {
			if o == w {
				g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
				return ctx.Err()
			}
		}
		// Admitted as ctx ended: pass the place on.
		g.releaseLocked()
		return ctx.Err()
	}
}

// release frees a place and admits the waiter first in line.
func (g *Gate) release() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

func (g *Gate) releaseLocked() {
	if len(g.waiting) == 0 {
		g.free++
		return
	}
	best := 0
	for i, w := range g.waiting {
		if b := g.waiting[best]; w.prio > b.prio || w.prio == b.prio && w.seq < b.seq {
			best = i
		}
	}
	w := g.waiting[best]
	g.waiting = append(g.waiting[:best], g.waiting[best+1:]...)
	close(w.ready)
}
