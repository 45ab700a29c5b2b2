package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// heldTrace is a trace as GET /admin/traces/{id} answers it, the fields
// the waterfall draws.
type heldTrace struct {
	TraceID string `json:"traceId"`
	Spans   []struct {
		SpanID string `json:"spanId"`
		Name   string `json:"name"`
		Events []struct {
			Name string `json:"name"`
		} `json:"events"`
	} `json:"spans"`
}

// fetchTrace reads trace id from the system's admin API.
func fetchTrace(t *testing.T, sys *system, id string) heldTrace {
	t.Helper()
	resp, err := http.Get(sys.base + "/admin/traces/" + id)
	if err != nil {
		t.Fatalf("GET /admin/traces/%s: %v", id, err)
	}
	defer resp.Body.Close()
	var body struct {
		Trace heldTrace `json:"trace"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin/traces/%s answered %s", id, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("reading trace %s: %v", id, err)
	}
	return body.Trace
}

// waterfall measures the waterfall the page draws: its trace id, and per
// span id its bars and the names of the event marks on its row. Its
// answer is JSON.
const waterfall = `(() => {
  const box = document.getElementById('waterfall');
  const rows = {};
  for (const b of box.querySelectorAll('.wf-bar')) {
    const r = rows[b.dataset.spanId] || (rows[b.dataset.spanId] = { bars: 0, marks: [], labels: 0, height: 0 });
    r.bars++;
    r.height = b.getBoundingClientRect().height;
  }
  for (const m of box.querySelectorAll('.wf-mark')) {
    const r = rows[m.dataset.spanId] || (rows[m.dataset.spanId] = { bars: 0, marks: [], labels: 0, height: 0 });
    r.marks.push(m.dataset.event);
  }
  for (const row of box.querySelectorAll('.wf-row')) {
    const r = rows[row.dataset.spanId];
    if (r) r.labels = [...row.querySelectorAll('.wf-mark-label')].filter((l) => l.textContent.startsWith(l.dataset.event) &&
      parseFloat(getComputedStyle(l).fontSize) >= 16).length;
  }
  return JSON.stringify({ traceId: box.dataset.traceId || '', rows });
})()`

// drawn is what waterfall reports.
type drawn struct {
	TraceID string
	Rows    map[string]struct {
		Bars   int
		Marks  []string
		Labels int
		Height float64
	}
}

// compareWaterfall returns what differs between the waterfall drawn and
// trace want, in numbers, or "" when every span has a bar and every
// event its mark, named for it and labelled in the room's type.
func compareWaterfall(got drawn, want heldTrace) string {
	if got.TraceID != want.TraceID {
		return fmt.Sprintf("the waterfall draws trace %q, not %s", got.TraceID, want.TraceID)
	}
	var problems []string
	bars, marks, events := 0, 0, 0
	for _, r := range got.Rows {
		bars += r.Bars
		marks += len(r.Marks)
	}
	for _, sp := range want.Spans {
		events += len(sp.Events)
		r, ok := got.Rows[sp.SpanID]
		if !ok || r.Bars < 1 {
			problems = append(problems, fmt.Sprintf("span %s (%s) has no bar", sp.SpanID, sp.Name))
			continue
		}
		if r.Height < 8 {
			problems = append(problems, fmt.Sprintf("span %s's bar is %.1f px tall, want 8 or more", sp.SpanID, r.Height))
		}
		var names []string
		for _, e := range sp.Events {
			names = append(names, e.Name)
		}
		slices.Sort(names)
		have := slices.Clone(r.Marks)
		slices.Sort(have)
		if !slices.Equal(names, have) {
			problems = append(problems, fmt.Sprintf("span %s (%s) has %d events %v but %d marks %v", sp.SpanID, sp.Name, len(names), names, len(have), have))
		}
		if r.Labels != len(names) {
			problems = append(problems, fmt.Sprintf("span %s (%s) has %d events but %d labels naming them in 16 px type or larger", sp.SpanID, sp.Name, len(names), r.Labels))
		}
	}
	if len(problems) == 0 {
		return ""
	}
	return fmt.Sprintf("trace %s has %d spans and %d events; the waterfall draws %d bars and %d marks: %s",
		want.TraceID, len(want.Spans), events, bars, marks, strings.Join(problems, "; "))
}

// assertWaterfall checks, for at most bound, that the page's waterfall
// draws trace id as the admin API holds it: at least one bar per span, and
// a mark per event with the event's name. A trace gains spans as they
// end, so between tries the page reads the trace again (its refresh).
func assertWaterfall(t *testing.T, ctx context.Context, sys *system, id string, bound time.Duration) heldTrace {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		want := fetchTrace(t, sys, id)
		js, err := chromedp.Run(ctx, chromedp.Evaluate[string](waterfall))
		if err != nil {
			t.Fatalf("measuring the waterfall: %v", err)
		}
		var got drawn
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			t.Fatalf("reading the waterfall's measures %s: %v", js, err)
		}
		diff := compareWaterfall(got, want)
		if diff == "" {
			return want
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waterfall does not match the trace within %v: %s", bound, diff)
		}
		// Read the trace again: spans that ended since are drawn then.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](
			`document.querySelector('.trace-item[data-trace-id="`+id+`"]') && document.querySelector('.trace-item[data-trace-id="`+id+`"]').click()`)); err != nil {
			t.Fatalf("opening trace %s again: %v", id, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// traceShown says what the trace view shows, for a failure.
const traceShown = `'message "' + document.getElementById('trace-message').textContent + '", ' +
  document.querySelectorAll('#trace-list .trace-item').length + ' traces listed (' + document.getElementById('trace-held').textContent +
  '), waterfall of ' + (document.getElementById('waterfall').dataset.traceId || 'no trace') + ' with ' +
  document.querySelectorAll('#waterfall .wf-bar').length + ' bars and ' + document.querySelectorAll('#waterfall .wf-mark').length + ' marks'`

// With every lab's solution and payment losing 30% of its answers, one
// click on the full view's retries opens the trace view at 1280x720,
// filtered to retried traces, with the newest drawn as a waterfall: a bar
// per span and a mark per event, named; filtered to checkouts, a click on
// a trace of the list draws that one, with the patterns' decisions. The
// trace view fits the screen without scrolling.
func TestDashboardTraceViewDrawsAWaterfall(t *testing.T) {
	sys := startSystem(t, "-lab", "all=solution", "-load", "20", "-fast", "-fault", "payment:POST /charges=lose,p=0.3")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 720)); err != nil {
		t.Fatalf("setting the viewport to 1280x720: %v", err)
	}
	openDashboard(t, ctx, sys)
	waitFor(t, ctx, 60*time.Second, "the retries count up with payment losing answers",
		`parseInt(document.getElementById('retries').textContent) > 0`, `'retries ' + document.getElementById('retries').textContent`)

	// One click from the panel.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.querySelector('a.trace-link[data-trace-outcome="retried"]').click()`)); err != nil {
		t.Fatalf("clicking the retries panel's link: %v", err)
	}
	waitFor(t, ctx, 30*time.Second, "the trace view opens filtered to retried traces, and draws the newest one as a waterfall",
		`document.documentElement.dataset.view === 'traces' && new URLSearchParams(location.search).get('outcome') === 'retried' && `+
			`document.querySelector('#trace-outcome button[data-outcome="retried"]').getAttribute('aria-pressed') === 'true' && `+
			`document.querySelectorAll('#trace-list .trace-item').length > 0 && document.querySelectorAll('#waterfall .wf-bar').length > 0`, traceShown)

	listed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#trace-list .trace-item')].map((b) => b.dataset.outcomes)`))
	if err != nil {
		t.Fatalf("reading the list: %v", err)
	}
	for i, o := range listed {
		if !slices.Contains(strings.Fields(o), "retried") {
			t.Errorf("trace %d of the %d listed has the outcomes %q, without retried", i+1, len(listed), o)
		}
	}
	first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('waterfall').dataset.traceId`))
	if err != nil {
		t.Fatalf("reading the waterfall's trace: %v", err)
	}
	newest := assertWaterfall(t, ctx, sys, first, 15*time.Second)
	t.Logf("the newest retried trace %s: %d spans", first, len(newest.Spans))

	// Filter to checkouts, then click a trace of the list (another than
	// the one drawn, where there is one): it is drawn instead, and named
	// in the address.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.querySelector('#trace-flow button[data-flow="checkout"]').click()`)); err != nil {
		t.Fatalf("clicking the checkout filter: %v", err)
	}
	waitFor(t, ctx, 60*time.Second, "the list holds retried checkouts only",
		`new URLSearchParams(location.search).get('flow') === 'checkout' && document.querySelectorAll('#trace-list .trace-item').length > 0 && `+
			`[...document.querySelectorAll('#trace-list .trace-item')].every((b) => b.dataset.flow === 'checkout' && b.dataset.outcomes.split(' ').includes('retried'))`,
		traceShown+` + '; listed: ' + [...document.querySelectorAll('#trace-list .trace-item')].map((b) => b.dataset.flow + ' ' + b.dataset.outcomes).join(', ')`)
	other, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const items = [...document.querySelectorAll('#trace-list .trace-item')];
		const b = items.find((b) => b.dataset.traceId !== document.getElementById('waterfall').dataset.traceId) || items[0];
		b.click();
		return b.dataset.traceId; })()`))
	if err != nil {
		t.Fatalf("clicking a trace of the list: %v", err)
	}
	waitFor(t, ctx, 15*time.Second, "the trace clicked is drawn and named in the address",
		`document.getElementById('waterfall').dataset.traceId === '`+other+`' && new URLSearchParams(location.search).get('trace') === '`+other+`'`, traceShown)
	held := assertWaterfall(t, ctx, sys, other, 15*time.Second)
	events := 0
	for _, sp := range held.Spans {
		events += len(sp.Events)
	}
	if events == 0 {
		t.Errorf("retried trace %s has %d spans and no event: a retried trace should show the patterns' decisions", other, len(held.Spans))
	}

	size, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ W, H int }](`({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight })`))
	if err != nil {
		t.Fatalf("measuring the page: %v", err)
	}
	if size.W > 1280 || size.H > 720 {
		t.Errorf("the trace view scrolls: the document is %dx%d in a 1280x720 viewport", size.W, size.H)
	}
	screenshot(t, ctx, "dashboard-trace")
}

// With tracing off (-traces 0) the admin API answers 501 not_wired, and
// the trace view says so in a sentence instead of a list.
func TestDashboardTraceViewSaysWhenTracingIsOff(t *testing.T) {
	sys := startSystem(t, "-traces", "0", "-fast")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(sys.base+"/?view=traces&outcome=failed&trace=newest")); err != nil {
		t.Fatalf("opening the trace view: %v", err)
	}
	waitFor(t, ctx, 30*time.Second, "the trace view says tracing is off, and draws no trace",
		`document.getElementById('traces-panel').dataset.state === 'off' && !document.getElementById('trace-message').hidden && `+
			`document.getElementById('trace-message').textContent.startsWith('Tracing is off') && `+
			`document.querySelectorAll('#trace-list .trace-item, #waterfall .wf-bar').length === 0`, traceShown)
}
