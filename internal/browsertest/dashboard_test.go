package browsertest

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const (
	paymentEdge  = `document.querySelector('#diagram [data-edge="order->payment"]')`
	paymentBadge = `document.querySelector('.badge[data-breaker="order->payment"]')`
	checkoutPct  = `parseFloat((document.getElementById('checkout-success') || {}).textContent)`
	shown        = `'edge ' + (` + paymentEdge + ` ? ` + paymentEdge + `.dataset.health : 'missing') + ', breaker ' + (` +
		paymentBadge + ` ? ` + paymentBadge + `.textContent : 'missing') + ', checkouts ' + document.getElementById('checkout-success').textContent + ', ' + document.getElementById('control-result').textContent`
)

// openDashboard opens the dashboard of sys and waits for its live stream
// and for traffic on the order->payment edge.
func openDashboard(t *testing.T, ctx context.Context, sys *system) {
	t.Helper()
	openDashboardAt(t, ctx, sys, "/")
}

// openDashboardAt is openDashboard at path, the page with a query.
func openDashboardAt(t *testing.T, ctx context.Context, sys *system, path string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(sys.base+path)); err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	waitFor(t, ctx, 60*time.Second, "the dashboard streams live and checkouts reach payment",
		`document.getElementById('stream-state').dataset.stream === 'live' && `+paymentEdge+` !== null && `+
			paymentEdge+`.dataset.idle !== 'true' && `+checkoutPct+` > 80`, shown)
}

// addFault types spec into the page's fault control and submits it.
func addFault(t *testing.T, ctx context.Context, spec string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Evaluate[any](`(() => {
		document.getElementById('fault-spec').value = '`+spec+`';
		document.getElementById('fault-add').click(); })()`))
	if err != nil {
		t.Fatalf("adding %s from the page: %v", spec, err)
	}
}

// With every lab's solution, a payment outage switched on from the page
// turns the payment edge failing, opens its breaker and drops checkouts;
// switched off, all three recover.
func TestDashboardShowsAPaymentOutageAndTheBreaker(t *testing.T) {
	sys := startSystem(t, "-lab", "all=solution", "-load", "20", "-fast")
	ctx := browser(t)
	openDashboard(t, ctx, sys)
	screenshot(t, ctx, "dashboard-healthy")

	addFault(t, ctx, "payment:POST /charges=error,status=503")
	waitFor(t, ctx, 60*time.Second, "the payment edge is drawn failing, its breaker badge reads OPEN and checkouts drop",
		paymentEdge+`.dataset.health === 'failing' && `+paymentBadge+` !== null && `+paymentBadge+
			`.textContent.trim() === 'OPEN' && `+checkoutPct+` < 80`, shown)
	assertNothingOverflows(t, ctx, "with payment down and every solution")
	screenshot(t, ctx, "dashboard-payment-down-solution")

	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.getElementById('fault-clear').click()`)); err != nil {
		t.Fatalf("removing the faults from the page: %v", err)
	}
	waitFor(t, ctx, 90*time.Second, "after the outage the edge is healthy, the breaker CLOSED and checkouts back",
		paymentEdge+`.dataset.health === 'ok' && `+paymentBadge+`.textContent.trim() === 'CLOSED' && `+checkoutPct+` > 80`, shown)
}

// With the labs' naive starting points the same outage piles checkouts up
// at the order service; the picture is for the README (under -update).
func TestDashboardShowsThePileUpOfTheNaiveSystem(t *testing.T) {
	if !*update {
		t.Skip("only takes the naive system's picture, under -update")
	}
	sys := startSystem(t, "-lab", "all=naive", "-load", "20", "-fast", "-order-limit", "20")
	ctx := browser(t)
	openDashboard(t, ctx, sys)
	addFault(t, ctx, "payment=hang")
	waitFor(t, ctx, 90*time.Second, "checkouts pile up at the order service, up to its limit of 20",
		`parseFloat(document.querySelector('[data-node="order"]').dataset.inFlight) >= 20`, shown)
	screenshot(t, ctx, "dashboard-payment-down-naive")
}

// With a game-day plan, the live game day's scenario started from the
// command line shows the incident playing and fills the score card on the
// dashboard, stage after stage.
func TestDashboardFillsTheGameDaysScoreCard(t *testing.T) {
	sys := startSystem(t, "-plan", "reference", "-scenario", "game-day", "-fast")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(sys.base+"/")); err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	const card = `document.querySelectorAll('#gameday-card tbody tr')`
	const shownCard = `'panel hidden ' + document.getElementById('gameday-panel').hidden + ', now "' + document.getElementById('gameday-now').textContent + '", ' + ` +
		card + `.length + ' rows, "' + document.getElementById('gameday-score').textContent + '"'`
	waitFor(t, ctx, 60*time.Second, "the game-day panel shows a stage playing",
		`!document.getElementById('gameday-panel').hidden && document.getElementById('gameday-now').textContent.includes('stage ')`, shownCard)
	waitFor(t, ctx, 90*time.Second, "the score card holds the first three stages' SLOs and a score",
		`document.querySelector('#gameday-card tr[data-stage="outage"]') !== null && `+
			`/Score so far: [0-9.]+ of 100 over [3-8] of 8 stages/.test(document.getElementById('gameday-score').textContent)`, shownCard)
	screenshot(t, ctx, "dashboard-game-day")
}

// edgeShown describes what the page draws on edge name, for a failure.
func edgeShown(name string) string {
	e := `document.querySelector('#diagram [data-edge="` + name + `"]')`
	return `'` + name + `: ' + (` + e + ` ? 'p99 ' + ` + e + `.dataset.p99 + 's, cause "' + ` + e + `.dataset.cause + '", health ' + ` +
		e + `.dataset.health + ', error rate ' + ` + e + `.dataset.errorRate + ', ' + ` + e + `.dataset.rate + '/s' : 'missing')`
}

// With lab 01's solution, a hung payment shows as timeouts: the
// order->payment edge's p99 is the 2 s timeout (within 5%), not a
// histogram bucket's bound, and its badge says TIMEOUT.
func TestDashboardShowsTimeoutsAtTheirTrueLatency(t *testing.T) {
	sys := startSystem(t, "-lab", "01=solution", "-load", "20", "-order-limit", "20")
	ctx := browser(t)
	openDashboard(t, ctx, sys)
	addFault(t, ctx, "payment=hang")
	const pay = `document.querySelector('#diagram [data-edge="order->payment"]')`
	waitFor(t, ctx, 60*time.Second, "order->payment reads p99 2.0s (1.9-2.1) and the cause TIMEOUT",
		pay+`.dataset.cause === 'TIMEOUT' && Math.abs(parseFloat(`+pay+`.dataset.p99) - 2.0) <= 0.1 && `+
			pay+`.querySelector('.cause').textContent.startsWith('TIMEOUT ')`, edgeShown("order->payment"))
	const applied = `parseInt((document.querySelector('#faults [data-fault] span') || {textContent: ''}).textContent.replace(/.*\((\d+) applied\).*/, '$1'))`
	waitFor(t, ctx, 30*time.Second, "the controls panel's count of the requests the fault met keeps up (above 5)",
		applied+` > 5`, `'controls panel: ' + (document.querySelector('#faults [data-fault]') || {textContent: 'no fault shown'}).textContent`)
	assertNothingOverflows(t, ctx, "with payment hanging and lab 01's timeouts")
	screenshot(t, ctx, "dashboard-timeouts")
}

// With lab 06's solution, a hung payment fills the gateway's orders
// compartment: the gateway->order edge says BULKHEAD_FULL, while
// gateway->menu keeps answering without errors.
func TestDashboardShowsTheBulkheadHoldingTheHang(t *testing.T) {
	sys := startSystem(t, "-lab", "06=solution", "-load", "20")
	ctx := browser(t)
	openDashboard(t, ctx, sys)
	addFault(t, ctx, "payment=hang")
	const orders = `document.querySelector('#diagram [data-edge="gateway->order"]')`
	const menus = `document.querySelector('#diagram [data-edge="gateway->menu"]')`
	waitFor(t, ctx, 90*time.Second, "gateway->order says BULKHEAD_FULL while gateway->menu answers (rate above 0, errors under 5%)",
		orders+`.dataset.cause === 'BULKHEAD_FULL' && parseFloat(`+menus+`.dataset.rate) > 0 && `+
			menus+`.dataset.errorRate !== '' && parseFloat(`+menus+`.dataset.errorRate) < 0.05`,
		edgeShown("gateway->order")+` + '; ' + `+edgeShown("gateway->menu"))
	assertNothingOverflows(t, ctx, "with payment hanging and lab 06's compartments")
	screenshot(t, ctx, "dashboard-bulkhead-solution")
}

// With lab 09's solution, a slow menu replica (the scenario
// slow-menu-replica from the command line) is hedged: the hedges sent and won count up on
// gateway->menu, whose p99 stays below menu-2's.
func TestDashboardShowsHedgesAroundASlowReplica(t *testing.T) {
	sys := startSystem(t, "-lab", "09=solution", "-load", "20", "-scenario", "slow-menu-replica")
	ctx := browser(t)
	openDashboard(t, ctx, sys)
	const menus = `document.querySelector('#diagram [data-edge="gateway->menu"]')`
	const menu2 = `document.querySelector('#diagram [data-node="menu-2"]')`
	const hedges = `(document.querySelector('[data-edge-counters="gateway->menu"] td:nth-child(4)') || {textContent: ''}).textContent`
	waitFor(t, ctx, 90*time.Second, "gateway->menu's hedges win (sent (won) with won above 0) and its p99 is below menu-2's",
		`/^[1-9][0-9]* \([1-9][0-9]*\)$/.test(`+hedges+`) && parseFloat(`+menus+`.dataset.p99) < parseFloat(`+menu2+`.dataset.p99)`,
		edgeShown("gateway->menu")+` + '; menu-2 p99 ' + `+menu2+`.dataset.p99 + 's; hedges (won) ' + `+hedges)
	assertNothingOverflows(t, ctx, "with menu-2 slow and lab 09's hedges")
	screenshot(t, ctx, "dashboard-hedging")
}

// overflows lists what the page draws outside its box: a node's text
// beyond its node's rectangle, a panel wider than the space it has.
const overflows = `(() => {
  const out = [];
  for (const g of document.querySelectorAll('#diagram .node:not(.group)')) {
    const r = g.querySelector('rect').getBBox();
    for (const t of g.querySelectorAll('text')) {
      const b = t.getBBox();
      if (b.width > 0 && (b.x < r.x - 0.5 || b.x + b.width > r.x + r.width + 0.5 || b.y < r.y - 0.5 || b.y + b.height > r.y + r.height + 0.5)) {
        out.push('node ' + g.dataset.node + ': "' + t.textContent + '" is ' + b.width.toFixed(0) + 'x' + b.height.toFixed(0) +
          ' at ' + b.x.toFixed(0) + ',' + b.y.toFixed(0) + ', its box ' + r.width + 'x' + r.height + ' at ' + r.x + ',' + r.y);
      }
    }
  }
  for (const p of document.querySelectorAll('.panel')) {
    if (p.scrollWidth > p.clientWidth + 1) {
      out.push('panel "' + (p.querySelector('h2') || {}).textContent + '" is ' + p.scrollWidth + 'px wide in ' + p.clientWidth + 'px');
    }
  }
  return out.join('; ');
})()`

// assertNothingOverflows fails the test for everything overflows finds.
func assertNothingOverflows(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	found, err := chromedp.Run(ctx, chromedp.Evaluate[string](overflows))
	if err != nil {
		t.Fatalf("measuring the page %s: %v", when, err)
	}
	if found != "" {
		t.Errorf("%s, the page draws outside its boxes: %s", when, found)
	}
}

// roomView measures the room view in the browser: whether the document
// scrolls, which visible elements stick out of their parent's box, how
// tall the node names are on screen, which edge labels overlap a node or
// another label, what paints with a health colour without showing an
// edge's health, and the numbers it shows. Its answer is JSON.
const roomView = `(() => {
  const doc = document.documentElement;
  const visible = (e) => {
    if (!e.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return null;
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 ? r : null;
  };
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (e.getAttribute('class') ? '.' + e.getAttribute('class').trim().split(/\s+/).join('.') : '') +
    (e.dataset.node ? '[data-node=' + e.dataset.node + ']' : '') + (e.dataset.edge ? '[data-edge=' + e.dataset.edge + ']' : '');
  const box = (r) => r.width.toFixed(0) + 'x' + r.height.toFixed(0) + ' at ' + r.left.toFixed(0) + ',' + r.top.toFixed(0);
  const outside = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = visible(e), p = e.parentElement;
    const pr = r && p && p !== document.body ? p.getBoundingClientRect() : null;
    if (!pr) continue;
    if (r.left < pr.left - 1 || r.top < pr.top - 1 || r.right > pr.right + 1 || r.bottom > pr.bottom + 1) {
      outside.push(name(e) + ' "' + e.textContent.trim().slice(0, 40) + '" is ' + box(r) + ', outside its parent ' + name(p) + ' ' + box(pr));
    }
  }
  for (const e of document.querySelectorAll('body > *')) {
    const r = visible(e);
    if (r && (r.left < -1 || r.top < -1 || r.right > innerWidth + 1 || r.bottom > innerHeight + 1)) {
      outside.push(name(e) + ' is ' + box(r) + ', outside the ' + innerWidth + 'x' + innerHeight + ' viewport');
    }
  }
  const names = [...document.querySelectorAll('#diagram .node:not(.group) > text.name')].map((t) => ({
    node: t.parentElement.dataset.node, height: t.getBoundingClientRect().height }));
  const nodes = [...document.querySelectorAll('#diagram .node')].map((g) => ({ name: g.dataset.node, r: g.querySelector('rect').getBoundingClientRect() }));
  const labels = [];
  for (const g of document.querySelectorAll('#diagram .edge')) {
    for (const t of g.querySelectorAll('text')) {
      const r = visible(t);
      if (r) labels.push({ name: g.dataset.edge + ' "' + t.textContent + '"', edge: g.dataset.edge, r });
    }
  }
  const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const overlaps = [];
  for (const l of labels) {
    for (const n of nodes) {
      // The menu instances' group is a frame: a label may not cross it either.
      if (hit(l.r, n.r)) overlaps.push(l.name + ' (' + box(l.r) + ') overlaps node ' + n.name + ' (' + box(n.r) + ')');
    }
  }
  labels.forEach((a, i) => labels.slice(i + 1).forEach((b) => {
    if (a.edge !== b.edge && hit(a.r, b.r)) overlaps.push(a.name + ' (' + box(a.r) + ') overlaps ' + b.name + ' (' + box(b.r) + ')');
  }));
  // The health colours, and every visible element that paints with one
  // though it does not show an edge's health (its line, its error rate,
  // the legend's swatches, a node's error rate).
  const probe = document.body.appendChild(document.createElement('i'));
  const health = ['--ok', '--degraded', '--failing'].map((v) => {
    probe.style.color = getComputedStyle(doc).getPropertyValue(v).trim();
    return getComputedStyle(probe).color;
  });
  probe.remove();
  const reused = [];
  for (const e of document.querySelectorAll('body *')) {
    if (!visible(e) || e.matches('.edge path, .edge tspan.err-degraded, .edge tspan.err-failing, .swatch, .node.busy > rect')) continue;
    const cs = getComputedStyle(e);
    const own = e.childNodes.length && [...e.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
    const paints = [['background', cs.backgroundColor], ['fill', e instanceof SVGElement && (own || e.matches('rect, path, line, polyline, circle')) ? cs.fill : ''],
      ['stroke', e instanceof SVGElement && cs.stroke !== 'none' && parseFloat(cs.strokeWidth) > 0 && !e.matches('text, tspan') ? cs.stroke : ''],
      ['border', parseFloat(cs.borderTopWidth) > 0 ? cs.borderTopColor : ''], ['text', !(e instanceof SVGElement) && own ? cs.color : '']];
    for (const [what, c] of paints) {
      if (c && health.includes(c)) reused.push(name(e) + ' "' + e.textContent.trim().slice(0, 30) + '" has a health colour as its ' + what + ' (' + c + ')');
    }
  }
  const text = (id) => { const e = document.getElementById(id); return e && visible(e) ? e.textContent.trim() : ''; };
  return JSON.stringify({
    scrollWidth: doc.scrollWidth, scrollHeight: doc.scrollHeight, outside, names, overlaps, reused,
    checkout: text('checkout-success'), customers: text('load-rate'), hedges: text('room-hedges'), change: text('room-change-line'),
    breakers: [...document.querySelectorAll('#breakers .badge, #breakers .none')].filter(visible).map((e) => e.textContent.trim()),
    bulkheads: [...document.querySelectorAll('#bulkheads .slots')].filter(visible).map((e) => e.textContent.trim()),
    hidden: ['chart-checkout', 'patterns', 'fault-form', 'labs'].filter((id) => visible(document.getElementById(id))),
  });
})()`

// roomShown is what the room view measures, as roomView reports it.
type roomShown struct {
	ScrollWidth, ScrollHeight int
	Outside, Overlaps, Reused []string
	Names                     []struct {
		Node   string
		Height float64
	}
	Checkout, Customers, Hedges, Change string
	Breakers, Bulkheads, Hidden         []string
}

// With lab 06's solution and a hung payment, the room view fits a
// projector's 1280x720 without scrolling, nothing sticks out of its box,
// edge labels stay off the nodes and each other, node names are at least
// 20 px tall, the health colours mean an edge's health and nothing else,
// and it shows the numbers a demo talks about: checkout
// success, the customers' rate, the breakers (or that there is none), the
// compartments' slots, hedges and the latest change, the fault set.
func TestDashboardRoomViewFitsAProjector(t *testing.T) {
	sys := startSystem(t, "-lab", "06=solution", "-load", "20")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 720)); err != nil {
		t.Fatalf("setting the viewport to 1280x720: %v", err)
	}
	openDashboardAt(t, ctx, sys, "/?view=room")
	addFault(t, ctx, "payment=hang")
	const orders = `document.querySelector('#diagram [data-edge="gateway->order"]')`
	waitFor(t, ctx, 90*time.Second, "gateway->order says BULKHEAD_FULL in the room view",
		orders+`.dataset.cause === 'BULKHEAD_FULL' && document.getElementById('room-change-line').textContent.includes('payment=hang')`,
		edgeShown("gateway->order")+` + '; latest change: ' + document.getElementById('room-change-line').textContent`)

	js, err := chromedp.Run(ctx, chromedp.Evaluate[string](roomView))
	if err != nil {
		t.Fatalf("measuring the room view: %v", err)
	}
	var got roomShown
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("reading the room view's measures %s: %v", js, err)
	}
	if got.ScrollWidth > 1280 || got.ScrollHeight > 720 {
		t.Errorf("the room view scrolls: the document is %dx%d in a 1280x720 viewport", got.ScrollWidth, got.ScrollHeight)
	}
	for _, o := range got.Outside {
		t.Errorf("sticks out: %s", o)
	}
	for _, o := range got.Overlaps {
		t.Errorf("edge label overlap: %s", o)
	}
	for _, o := range got.Reused {
		t.Errorf("a health colour (ok, degraded, failing) means something else: %s", o)
	}
	if len(got.Names) != 8 {
		t.Errorf("the room view draws %d node names, want the 8 nodes: %+v", len(got.Names), got.Names)
	}
	for _, n := range got.Names {
		if n.Height < 20 {
			t.Errorf("node %s's name is %.1f px tall on screen, want at least 20", n.Node, n.Height)
		}
	}
	if !strings.HasSuffix(got.Checkout, "%") {
		t.Errorf("checkout success reads %q, want a percentage", got.Checkout)
	}
	if !strings.HasSuffix(got.Customers, "/s") {
		t.Errorf("the customers' rate reads %q, want requests a second", got.Customers)
	}
	if !regexp.MustCompile(`^\d+ / \d+$`).MatchString(got.Hedges) {
		t.Errorf("hedges read %q, want sent / won", got.Hedges)
	}
	if len(got.Breakers) == 0 {
		t.Error("the room view shows no breaker badge, nor that there is none")
	}
	for _, b := range got.Breakers {
		if b != "CLOSED" && b != "OPEN" && b != "HALF-OPEN" && (len(got.Breakers) > 1 || !strings.HasPrefix(b, "no breaker")) {
			t.Errorf("the breakers read %q, want their badges (CLOSED, OPEN, HALF-OPEN) or that there is none", got.Breakers)
		}
	}
	slots := regexp.MustCompile(`^\d+ / \d+ slots`)
	if len(got.Bulkheads) == 0 {
		t.Error("the room view shows no compartment, with lab 06's solution")
	}
	for _, b := range got.Bulkheads {
		if !slots.MatchString(b) {
			t.Errorf("a compartment reads %q, want in use / capacity slots", b)
		}
	}
	if !strings.Contains(got.Change, "FAULT ON") || !strings.Contains(got.Change, "payment=hang") {
		t.Errorf("the latest change reads %q, want the fault payment=hang on", got.Change)
	}
	if len(got.Hidden) > 0 {
		t.Errorf("the room view shows %v, which only the full view has", got.Hidden)
	}
	assertNothingOverflows(t, ctx, "in the room view with payment hanging and lab 06's compartments")
	t.Logf("room view: %s", js)
	screenshot(t, ctx, "dashboard-room-view")
}
