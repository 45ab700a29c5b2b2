package scenario

import (
	"sync"
	"time"
)

// Kinds of Change.
const (
	KindFaultSet         = "fault-set"         // a fault rule was added or replaced
	KindFaultRemoved     = "fault-removed"     // a fault rule was removed
	KindLoad             = "load"              // the load generator's rate or mix changed
	KindGameDay          = "gameday"           // lab 07's game-day switch changed
	KindScenarioStarted  = "scenario-started"  // a scenario began
	KindScenarioStopped  = "scenario-stopped"  // a scenario was stopped before its end
	KindScenarioFinished = "scenario-finished" // a scenario ran to its end
	KindScenarioFailed   = "scenario-failed"   // a scenario's step could not be applied
	KindCheck            = "check"             // the checker's findings after a scenario (Scenario.Check)
	KindCrash            = "crash"             // a process stopped answering, or was killed on purpose
	KindRestart          = "restart"           // a process answers again after a crash
)

// Change is one entry of the change log.
type Change struct {
	// Seq numbers the changes from 1, in the order they were made.
	Seq int64 `json:"seq"`
	// Time is when the change was made (time.Now: virtual under
	// testing/synctest).
	Time time.Time `json:"time"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// By says who made the change: "admin" for the admin API, "scenario
	// payment-down" for a scenario's step, whatever a caller of Controls
	// passes.
	By string `json:"by"`
	// Description says what changed, in a short sentence for people.
	Description string `json:"description"`
}

// DefaultLogSize is how many changes a Log keeps when NewLog is given 0.
const DefaultLogSize = 500

// Log is a bounded change log: it keeps the most recent changes and drops
// the oldest. It is safe for concurrent use; a nil *Log records nothing.
type Log struct {
	mu      sync.Mutex
	size    int
	changes []Change // ring once full; start is the oldest
	start   int
	seq     int64
}

// NewLog returns an empty log that keeps the last size changes; size 0
// means DefaultLogSize, and a negative size is treated as 1.
func NewLog(size int) *Log {
	if size == 0 {
		size = DefaultLogSize
	}
	return &Log{size: max(size, 1)}
}

// Add records a change made now and returns it.
func (l *Log) Add(kind, by, description string) Change {
	if l == nil {
		return Change{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	c := Change{Seq: l.seq, Time: time.Now(), Kind: kind, By: by, Description: description}
	if len(l.changes) < l.size {
		l.changes = append(l.changes, c)
	} else {
		l.changes[l.start] = c
		l.start = (l.start + 1) % l.size
	}
	return c
}

// Changes returns the changes kept, oldest first, whose Seq is greater
// than after (0 for all of them).
func (l *Log) Changes(after int64) []Change {
	if l == nil {
		return []Change{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Change, 0, len(l.changes))
	for i := range l.changes {
		c := l.changes[(l.start+i)%len(l.changes)]
		if c.Seq > after {
			out = append(out, c)
		}
	}
	return out
}
