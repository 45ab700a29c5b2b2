package class

import (
	"fmt"
	"sort"
	"time"
)

// stepEntry is one step of a results file as gather counts it (a step
// listed twice counts once).
type stepEntry struct {
	task, step int // step 0: the file gave no step number
	order      int // its place among the file's steps
	status     string
	ranAt      time.Time // zero when the file gave none
}

// stuckAt returns where a learner is stuck: the lowest lab, then the
// lowest step, whose status is not pass, as "03 step 2" ("03 step ?" for a
// step without a number, which sorts after its lab's numbered steps), or
// "03 build error" when that lab does not compile; "done" when every step
// passes, "-" when the file has no step.
func stuckAt(steps []stepEntry, labs map[int]*labCell) string {
	if len(steps) == 0 {
		return "-"
	}
	sorted := append([]stepEntry(nil), steps...)
	key := func(e stepEntry) int {
		if e.step > 0 {
			return e.step
		}
		return 1<<30 + e.order
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].task != sorted[j].task {
			return sorted[i].task < sorted[j].task
		}
		return key(sorted[i]) < key(sorted[j])
	})
	for _, e := range sorted {
		if e.status == ResultPass {
			continue
		}
		switch {
		case labs[e.task].buildError():
			return fmt.Sprintf("%02d build error", e.task)
		case e.step > 0:
			return fmt.Sprintf("%02d step %d", e.task, e.step)
		}
		return fmt.Sprintf("%02d step ?", e.task)
	}
	return "done"
}

// lastPass returns the newest ran_at among the passing steps (zero when
// none of them has one) and whether any step passes.
func lastPass(steps []stepEntry) (at time.Time, passes bool) {
	for _, e := range steps {
		if e.status != ResultPass {
			continue
		}
		passes = true
		if e.ranAt.After(at) {
			at = e.ranAt
		}
	}
	return at, passes
}

// sinceLastPass returns the table's cell for how long before now the
// row's last passing step ran: an age (see age), "never" when no step
// passes, "unknown" when steps pass but none says when it ran.
func (r *learnerRow) sinceLastPass(now time.Time) string {
	switch {
	case !r.passes:
		return "never"
	case r.lastPass.IsZero():
		return "unknown"
	}
	return age(now.Sub(r.lastPass))
}

// lastPassAt returns the CSV's cell for the last passing step: its ran_at,
// RFC 3339 in UTC, or "" when no step passes or none says when it ran.
func (r *learnerRow) lastPassAt() string {
	if r.lastPass.IsZero() {
		return ""
	}
	return rfc3339UTC(r.lastPass)
}

// age returns d, rounded down, as a person reads it: "just now" under a
// minute, and for any d below zero (a learner's clock ahead of this one:
// an age is never negative), "12 min" under an hour, "2 h 5 min" (or
// "2 h") under a day, then "3 d".
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 24*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	return fmt.Sprintf("%d d", int(d/(24*time.Hour)))
}
