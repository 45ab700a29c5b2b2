package browsertest

import (
	"context"
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
	if err := chromedp.Do(ctx, chromedp.Navigate(sys.base+"/")); err != nil {
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
