package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/internal/compose"
)

// This file is the composition table: what each lab plugs at its
// integration point, and how labs that meet at one place compose. The
// usage text, the start banner, the errors and the README's table are all
// written from it (TestReadmeTableMatchesTheCode keeps the README in step).

// choice is what runs at one lab's integration point (-lab NN=choice).
type choice = compose.Choice

const (
	off      = compose.Off      // the system as it is without the lab
	naive    = compose.Naive    // the broken starting point of the lab's story
	solution = compose.Solution // solutions/NN-name, with the settings its README teaches
	learner  = compose.Learner  // labs/NN-name: the learner's code, built in with -tags learnerNN
)

// parseChoice reads off, naive, solution or learner.
func parseChoice(s string) (choice, bool) {
	i := slices.Index(compose.ChoiceNames, s)
	return choice(i), i >= 0
}

// labRow is one lab at its integration point: a row of the table.
type labRow struct {
	num   int
	name  string // the directory under labs/ and solutions/: "05-breaker"
	place string // the integration point
	off   string // what runs there with the lab off
	naive string // what naive plugs
	fix   string // what solution and learner plug: the settings the lab's README teaches
}

// title is the lab's name without its number: "breaker".
func (l labRow) title() string { return l.name[3:] }

// id is the lab's number as the flags write it: "05".
func (l labRow) id() string { return fmt.Sprintf("%02d", l.num) }

// labRows are the nine labs, in order: labRows[n-1] is lab n.
var labRows = []labRow{
	{1, "01-timeouts", "the order service's payment client",
		"no timeout", "no timeout (the same as off)",
		"connect within 300ms, the whole call within 2s"},
	{2, "02-deadlines", "the order service's handler and clients; the gateway's order client",
		"no budget on the wire", "10s for every request, on a context detached from its caller",
		"X-Timeout-Ms: own budget 10s, at least 250ms to start, 50ms per hop"},
	{3, "03-retries", "the payment client's transport",
		"no retries", "3 attempts at once after any failure; retries go out without their body",
		"3 attempts of idempotent requests, full jitter from 100ms capped at 2s, Retry-After"},
	{4, "04-retry-budgets", "the retry loops of a checkout: gateway, order service, payment client",
		"no retries", "3 attempts at each of the 3 layers: up to 27 charges per tap",
		"the payment client alone retries, within a budget of 10% + 1 a second, 2 saved"},
	{5, "05-breaker", "the order service's payment calls; the gateway's order client",
		"no breaker", "no breaker (the same as off)",
		"opens at half of the last 20 calls (10 at least), open 30s (-fast: 3s), 1 trial; a breaker per order endpoint"},
	{6, "06-bulkhead", "the gateway: its limit and the calls to its dependencies",
		"gateway limit 200, no compartments", "gateway limit 30, one pool shared by every dependency",
		"gateway limit 30, 10 slots each for orders, menu and courier, no wait"},
	{7, "07-fallback", "the gateway's dependencies",
		"plain calls; auth down denies", "auth down lets the token's user in (fail open)",
		"stale menus, a default ETA, popular dishes, deferred reviews, clear checkout errors; auth down denies"},
	{8, "08-idempotency", "charge keys, payment's key store, the courier-dispatch consumer",
		"one charge attempt, no key; no dispatch queue",
		"4 charge attempts without a key; the consumer sends the freest courier on every delivery",
		"a key per order, kept 24h by payment; the consumer sends the order's own courier"},
	{9, "09-hedging", "the gateway's menu transport",
		"each read goes to one replica", "no hedging (the same as off)",
		"a copy to the next replica after the p95 of the last 2000 reads (200ms at first), 10% budget, burst 100"},
}

// meeting is a place where several labs plug in, and how they compose
// there.
type meeting struct {
	place string
	labs  []int  // outermost first
	how   string // the stated order
	// oneRetrier: only the first lab of labs that is on retries; a later
	// one plugs the rest of its row without the part that without names,
	// or, when it has no such entry, is not plugged at all (and is refused
	// when named).
	oneRetrier bool
	without    map[int]string
}

// meetings are the places where labs meet. The order service's payment
// call is one path, outermost first: lab 05's breaker, the retry loop,
// lab 08's key, lab 01's client, lab 02's header, lab 03's transport.
var meetings = []meeting{
	{place: "the charge's retry loop", labs: []int{4, 3, 8}, oneRetrier: true,
		how: "one retry layer at the payment edge: the first of labs 04, 03 and 08 that is on retries the charge; " +
			"after it, lab 08 still plugs its keys, key store and consumer, and lab 03 is left out (refused when named)",
		without: map[int]string{8: "its own charge retries"}},
	{place: "the order service's payment calls", labs: []int{5, 4, 8},
		how: "lab 05's breaker outside the retry loop: it judges each charge once, retries included, and an open breaker refuses it whole"},
	{place: "the payment client", labs: []int{1, 2, 3},
		how: "lab 01's client, whose 2s bound covers the whole call with all of lab 03's attempts inside it " +
			"(a loop above the client, lab 04's or 08's, gives each attempt its own 2s); inside it lab 02's header, " +
			"written once per call, then lab 03's transport"},
	{place: "the gateway's order client", labs: []int{7, 6, 4, 5, 2},
		how: "lab 07's fallback, lab 06's orders compartment, lab 04's gateway layer (naive only), lab 05's breakers, lab 02's header"},
	{place: "the gateway's menu client", labs: []int{7, 6, 9},
		how: "lab 07's stale menus, lab 06's menu compartment, lab 09's hedges: one slot covers a read and its copy"},
}

// retryMeeting is the meeting where only one lab may retry.
func retryMeeting() meeting {
	for _, m := range meetings {
		if m.oneRetrier {
			return m
		}
	}
	panic("no retry meeting in the table")
}

// row returns lab n's row (1 <= n <= 9).
func row(n int) labRow { return labRows[n-1] }

// plan is what runs at every lab's integration point, resolved from the
// -lab flags.
type plan struct {
	choice [10]choice // by lab number; index 0 unused
	named  [10]bool   // the lab was named in -lab NN=..., not only by all=
	// unplugged: the lab is on but another lab holds its place; note says
	// why, or what the lab plugs less than its row says.
	unplugged [10]bool
	note      [10]string
	// retrier is the lab whose loop retries the charge; 0 for none.
	retrier int
	// fromPlan: a game-day plan (-plan) chose the labs, and each runs
	// with the plan's settings rather than its README's.
	fromPlan bool
}

func (p plan) on(n int) bool { return p.choice[n] != off && !p.unplugged[n] }

// labs is what the plan runs, as compose wires it.
func (p plan) labs() compose.Labs {
	return compose.Labs{Choice: p.choice, Unplugged: p.unplugged, Retrier: p.retrier}
}

// labFlags collects the repeatable -lab flag; resolve reads them in order.
type labFlags []string

func (f *labFlags) String() string { return strings.Join(*f, " ") }

func (f *labFlags) Set(v string) error {
	*f = append(*f, v)
	return nil
}

// resolve turns -lab values into a plan. all=X sets every lab; NN=X sets
// lab NN; later values override earlier ones. haveLearner reports whether
// this build has lab n's learner code. Bad values, a learner lab this
// build lacks, and a named lab whose place another lab holds are
// *usageErrors that say why and what to run instead.
func resolve(values []string, haveLearner func(n int) bool) (plan, error) {
	var p plan
	for _, v := range values {
		which, c, err := parseLabValue(v)
		if err != nil {
			return plan{}, err
		}
		if which == 0 {
			for n := 1; n <= 9; n++ {
				p.choice[n], p.named[n] = c, false
			}
			continue
		}
		p.choice[which], p.named[which] = c, true
	}

	built := 0
	for n := 1; n <= 9; n++ {
		if haveLearner(n) {
			built++
		}
	}
	for n := 1; n <= 9; n++ {
		if p.choice[n] != learner || haveLearner(n) {
			continue
		}
		if p.named[n] {
			return plan{}, usagef("-lab %s=learner runs your labs/%s code, which this build leaves out (a lab you are still writing never breaks the default build); "+
				"start it with: go run ./cmd/workshop live %s", row(n).id(), row(n).name, row(n).id())
		}
		if built == 0 {
			return plan{}, usagef("-lab all=learner runs your code of every lab, and this build has none of it; " +
				"start the labs you have begun with: go run ./cmd/workshop live")
		}
		p.choice[n] = off
		p.note[n] = "your code is not built in (go run ./cmd/workshop live " + row(n).id() + ")"
	}

	m := retryMeeting()
	for _, n := range m.labs {
		if p.choice[n] == off {
			continue
		}
		if p.retrier == 0 {
			p.retrier = n
			continue
		}
		r := row(p.retrier)
		if less, ok := m.without[n]; ok {
			p.note[n] = fmt.Sprintf("without %s: lab %s retries the charge (one retry layer)", less, r.id())
			continue
		}
		if p.named[n] {
			return plan{}, usagef("-lab %s=%s and lab %s (%s) both retry the charge, and the system keeps one retry layer at the payment edge: "+
				"lab %s would retry under lab %s's loop and multiply its attempts. "+
				"Run one of them: set -lab %s=off, or leave lab %s off",
				row(n).id(), p.choice[n], r.id(), p.choice[p.retrier], row(n).id(), r.id(), r.id(), row(n).id())
		}
		p.unplugged[n] = true
		p.note[n] = fmt.Sprintf("not plugged: lab %s retries the charge (one retry layer)", r.id())
	}
	return p, nil
}

// parseLabValue reads one -lab value, "NN=choice" or "all=choice", and
// returns the lab's number (0 for all) and the choice.
func parseLabValue(v string) (int, choice, error) {
	which, what, ok := strings.Cut(v, "=")
	if !ok {
		if c, ok := parseChoice(v); ok {
			return 0, 0, usagef("-lab %s: name the lab it is for: -lab 01=%s (lab 01, timeouts) or -lab all=%s", v, c, c)
		}
		return 0, 0, usagef("-lab %q: want NN=choice, for example -lab 05=solution or -lab all=naive", v)
	}
	c, ok := parseChoice(what)
	if !ok {
		return 0, 0, usagef("-lab %s: %q is not a choice; choose off, naive, solution or learner", v, what)
	}
	if which == "all" {
		return 0, c, nil
	}
	n, ok := labNumber(which)
	if !ok {
		return 0, 0, usagef("-lab %s: there is no lab %q; the labs are 01 to 09 (or all)", v, which)
	}
	return n, c, nil
}

// labNumber reads a lab as the flags name it: "5", "05" or "05-breaker".
func labNumber(s string) (int, bool) {
	for _, l := range labRows {
		if s == l.name {
			return l.num, true
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 9 || len(s) > 2 {
		return 0, false
	}
	return n, true
}

// plugged says in a few words what runs at lab n's integration point.
func (p plan) plugged(n int) string {
	l := row(n)
	if p.unplugged[n] {
		return p.note[n]
	}
	var what string
	switch p.choice[n] {
	case off:
		what = l.off
	case naive:
		what = l.naive
	case solution, learner:
		what = l.fix
		if p.fromPlan {
			what = "with the game-day plan's settings"
		}
	}
	if p.note[n] != "" {
		what += "; " + p.note[n]
	}
	return what
}

// labLines are the banner's lines about the labs: one per lab.
func (p plan) labLines() []string {
	lines := make([]string, 0, 9)
	for _, l := range labRows {
		lines = append(lines, fmt.Sprintf("  %s %-14s %-8s  %s", l.id(), l.title(), p.choice[l.num], p.plugged(l.num)))
	}
	return lines
}

// usageTable is the part of the usage text that lists the labs and where
// they meet.
func usageTable() string {
	var b strings.Builder
	for _, l := range labRows {
		fmt.Fprintf(&b, "  %s %s, at %s\n", l.id(), l.title(), l.place)
		fmt.Fprintf(&b, "       off: %s\n       naive: %s\n       solution, learner: %s\n", l.off, l.naive, l.fix)
	}
	b.WriteString("\nWhere labs meet, outermost first:\n")
	for _, m := range meetings {
		fmt.Fprintf(&b, "  %s: %s\n", m.place, m.how)
	}
	return b.String()
}

// readmeTable is the README's table of the labs, in Markdown.
func readmeTable() string {
	var b strings.Builder
	b.WriteString("| lab | integration point | off | naive | solution, learner |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, l := range labRows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", l.name, l.place, l.off, l.naive, l.fix)
	}
	b.WriteString("\nWhere labs meet, outermost first:\n\n")
	for _, m := range meetings {
		fmt.Fprintf(&b, "- %s: %s.\n", m.place, m.how)
	}
	return b.String()
}
