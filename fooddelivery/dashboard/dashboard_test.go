package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/admin"
	"github.com/gophereats/resilience/fooddelivery/dashboard"
	"github.com/gophereats/resilience/fooddelivery/internal/sameorigin"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w
}

// absoluteURL finds any scheme-qualified or protocol-relative address.
var absoluteURL = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|https?://`)

// The page and its assets are served with their content types, and name
// no address outside the gateway's own origin.
func TestPageAndAssets(t *testing.T) {
	d := dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics()})
	page := get(t, d, "/")
	require.Equal(t, http.StatusOK, page.Code)
	assert.Equal(t, "text/html; charset=utf-8", page.Header().Get("Content-Type"))
	body := page.Body.String()
	assert.Contains(t, body, `id="diagram"`)
	assert.Contains(t, body, `src="dashboard/static/app.js"`)
	assert.Contains(t, body, `href="dashboard/static/style.css"`)

	for path, ct := range map[string]string{
		"/dashboard/static/app.js":    "text/javascript; charset=utf-8",
		"/dashboard/static/style.css": "text/css; charset=utf-8",
	} {
		w := get(t, d, path)
		require.Equal(t, http.StatusOK, w.Code, path)
		assert.Equal(t, ct, w.Header().Get("Content-Type"), path)
		assert.NotEmpty(t, w.Body.String(), path)
	}
	for _, path := range []string{"/dashboard/static/", "/dashboard/static/nope.js", "/dashboard/static/index.html",
		"/dashboard/static/../dashboard.go", "/dashboard", "/elsewhere"} {
		assert.Equal(t, http.StatusNotFound, get(t, d, path).Code, path)
	}
	w := httptest.NewRecorder()
	d.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)

	// Every embedded file, not only those the tests fetch.
	files := dashboard.Files()
	require.NotEmpty(t, files)
	err := fs.WalkDir(files, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, path)
		require.NoError(t, err)
		assert.Empty(t, absoluteURL.FindAllString(string(b), -1), "%s names an address outside the page's origin", path)
		assert.NotContains(t, string(b), "@import", path)
		return nil
	})
	require.NoError(t, err)
}

// The page takes ?view=full (the default) or ?view=room, and says so:
// one layout or the other, written on <html> for the style sheet and the
// script.
func TestPageViews(t *testing.T) {
	d := dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics()})
	for path, view := range map[string]string{"/": "full", "/?view=full": "full", "/?view=room": "room", "/?view=room&": "room"} {
		w := get(t, d, path)
		require.Equal(t, http.StatusOK, w.Code, path)
		assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"), path)
		body := w.Body.String()
		assert.Contains(t, body, `<html lang="en" data-view="`+view+`">`, path)
		assert.Equal(t, 1, strings.Count(body, "data-view="), path)
		assert.Equal(t, strconv.Itoa(len(body)), w.Header().Get("Content-Length"), path)
		// Either view links to the other.
		assert.Contains(t, body, `href="?view=room"`, path)
		assert.Contains(t, body, `href="?view=full"`, path)
	}
	w := httptest.NewRecorder()
	d.ServeHTTP(w, httptest.NewRequest(http.MethodHead, "/?view=room", nil))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Empty(t, w.Body.String())
}

// A view the page does not have, a query parameter it does not take, a
// view given twice or a query that does not parse is answered 400 in
// plain text that names what is wrong and the views there are.
func TestPageRefusesUnknownViewsAndParameters(t *testing.T) {
	d := dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics()})
	for path, want := range map[string][]string{
		"/?view=nonsense":       {`view "nonsense" is not one of`, "full", "room"},
		"/?view=":               {`view "" is not one of`, "full", "room"},
		"/?view":                {`view "" is not one of`, "full", "room"},
		"/?view=ROOM":           {`view "ROOM"`, "full", "room"},
		"/?view=room&view=full": {"view is given 2 times", "full or room"},
		"/?zoom=2":              {`unknown query parameter "zoom"`, "view (full or room)"},
		"/?view=room&zoom=2":    {`unknown query parameter "zoom"`, "view (full or room)"},
		"/?b=1&a=2":             {`unknown query parameters "a", "b"`, "full or room"},
		"/?%zz":                 {"not a URL query", "view=full or view=room"},
		"/?view=room;zoom=2":    {"not a URL query", "view=full or view=room"},
		"/?view=%3Cscript%3E":   {`view "<script>" is not one of`},
		"/?after=3":             {`unknown query parameter "after"`},
	} {
		w := get(t, d, path)
		assert.Equal(t, http.StatusBadRequest, w.Code, path)
		assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"), path)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), path)
		for _, s := range want {
			assert.Contains(t, w.Body.String(), s, path)
		}
		assert.NotContains(t, w.Body.String(), "<html", path)
	}
}

// guardedPage returns a function that GETs path from a dashboard behind
// the admin API's guard for 127.0.0.1:8080, with Host host and header.
func guardedPage(t *testing.T) func(path, host string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	h, err := admin.Guard("127.0.0.1:8080", dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics()}))
	require.NoError(t, err)
	return func(path, host string, header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Host = host
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
}

// Behind the guard the dashboard is served with (admin.Guard), a request
// for either view, or with a bad parameter, from another host name, origin
// or site is refused as the page is without one: 403 before the view is
// read, so that a foreign page learns nothing from the parameter.
func TestGuardCoversTheViewParameter(t *testing.T) {
	send := guardedPage(t)
	const own = "127.0.0.1:8080"
	for _, path := range []string{"/", "/?view=full", "/?view=room"} {
		assert.Equal(t, http.StatusOK, send(path, own, nil).Code, path)
		assert.Equal(t, http.StatusOK, send(path, "localhost:8080", map[string]string{
			"Origin": "http://localhost:8080", "Sec-Fetch-Site": "same-origin"}).Code, path)
	}
	assert.Equal(t, http.StatusBadRequest, send("/?view=nonsense", own, nil).Code)
	assert.Equal(t, http.StatusBadRequest, send("/?zoom=2", own, nil).Code)

	for _, path := range []string{"/", "/?view=room", "/?view=full", "/?view=nonsense", "/?zoom=2", "/?%zz"} {
		for name, c := range map[string]struct {
			host   string
			header map[string]string
			code   string
		}{
			"foreign Host":     {"attacker.example:8080", nil, "host_refused"},
			"rebound Host":     {"attacker.example", nil, "host_refused"},
			"another port":     {"127.0.0.1:9090", nil, "host_refused"},
			"foreign Origin":   {own, map[string]string{"Origin": "http://attacker.example"}, "cross_origin"},
			"cross-site fetch": {own, map[string]string{"Sec-Fetch-Site": "cross-site"}, "cross_site"},
		} {
			w := send(path, c.host, c.header)
			assert.Equal(t, http.StatusForbidden, w.Code, "%s %s", name, path)
			var refusal struct {
				Error struct{ Code, Message string }
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &refusal), "%s %s: %s", name, path, w.Body)
			assert.Equal(t, c.code, refusal.Error.Code, "%s %s", name, path)
			assert.NotContains(t, w.Body.String(), "view", "%s %s: the refusal says nothing of the view", name, path)
		}
	}
}

// record serves n requests at once on an instance's route, each answered
// with status code after d, and returns when all are answered.
func record(m *metrics.Metrics, instance, route string, code, n int, d time.Duration) {
	h := fooddelivery.NewInstance(instance, 0, m).Route(route, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d)
		w.WriteHeader(code)
	}))
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil)) })
	}
	wg.Wait()
}

func TestStateHasTheSnapshotNumbers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		state := metrics.BreakerClosed
		m.ReportBreaker("order->payment", func() metrics.BreakerState { return state })
		m.ReportBulkhead("gateway->menu", 4, func() int { return 3 })
		m.ReportRetryBudget("order->payment", func() float64 { return 7.5 })
		m.Edge("order", "payment").Retries.Add(4)
		m.Edge("gateway", "menu").BulkheadFull.Add(2)
		log := scenario.NewLog(0)
		d := dashboard.New(dashboard.Config{Metrics: m, Log: log, Labs: []string{"  01 timeouts       solution  x"}})
		d.Sample()
		time.Sleep(7 * time.Second)
		// In the next 3 s: 80 charges answered 200 in 20ms, 20 answered
		// 503 in 3s, 50 menus.
		var wg sync.WaitGroup
		wg.Go(func() { record(m, "payment", "POST /charges", 200, 80, 20*time.Millisecond) })
		wg.Go(func() { record(m, "payment", "POST /charges", 503, 20, 3*time.Second) })
		wg.Go(func() { record(m, "menu-2", "GET /restaurants/{id}/menu", 200, 50, 2*time.Millisecond) })
		wg.Wait()
		state = metrics.BreakerOpen
		log.Add(scenario.KindFaultSet, "test", "fault set: payment=error,status=503")
		d.Sample()

		w := get(t, d, "/dashboard/state")
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
		var s dashboard.State
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &s))
		require.NotNil(t, s.Frame)
		assert.Equal(t, 10.0, s.Frame.WindowSeconds)

		edge := func(name string) dashboard.Edge {
			for _, e := range s.Frame.Edges {
				if e.Edge == name {
					return e
				}
			}
			t.Fatalf("no edge %s", name)
			return dashboard.Edge{}
		}
		pay := edge("order->payment")
		assert.Equal(t, 10.0, pay.Rate, "100 answers in 10 s")
		require.NotNil(t, pay.ErrorRate)
		assert.Equal(t, 0.2, *pay.ErrorRate)
		assert.Equal(t, "degraded", pay.Health, "20% is above 5%, below 50%")
		require.NotNil(t, pay.P99)
		assert.Greater(t, *pay.P99, 2.5, "the slowest 20% took 3 s")
		assert.Equal(t, "open", pay.Breaker)
		assert.Equal(t, int64(4), pay.Client.Retries)

		for _, name := range []string{"gateway->menu", "order->menu"} {
			e := edge(name)
			assert.Equal(t, 5.0, e.Rate, name)
			require.NotNil(t, e.ErrorRate, name)
			assert.Zero(t, *e.ErrorRate, name)
			assert.Equal(t, "ok", e.Health, name)
		}
		idle := edge("gateway->auth")
		assert.Zero(t, idle.Rate)
		assert.Nil(t, idle.ErrorRate)
		assert.Equal(t, "ok", idle.Health)

		require.Len(t, s.Frame.Breakers, 1)
		assert.Equal(t, dashboard.Breaker{Name: "order->payment", State: "open", Label: "OPEN"}, s.Frame.Breakers[0])
		require.Len(t, s.Transitions, 1)
		assert.Equal(t, "closed", s.Transitions[0].From)
		assert.Equal(t, "open", s.Transitions[0].To)
		require.Len(t, s.Frame.Bulkheads, 1)
		assert.Equal(t, 3, s.Frame.Bulkheads[0].InUse)
		assert.Equal(t, 4, s.Frame.Bulkheads[0].Capacity)
		assert.Equal(t, int64(2), s.Frame.Bulkheads[0].Rejections)
		require.Len(t, s.Frame.RetryBudgets, 1)
		assert.Equal(t, 7.5, s.Frame.RetryBudgets[0].Tokens)
		assert.Equal(t, int64(4), s.Frame.Totals.Retries)

		require.Len(t, s.History, 2)
		assert.Equal(t, 10.0, s.History[1].EdgeRate["order->payment"])
		assert.Equal(t, "open", s.History[1].Breakers["order->payment"])
		require.Len(t, s.Changes, 1)
		assert.Equal(t, scenario.KindFaultSet, s.Changes[0].Kind)
		assert.Equal(t, []string{"  01 timeouts       solution  x"}, s.Labs)
		assert.Equal(t, dashboard.Thresholds{Degraded: 0.05, Failing: 0.5}, s.Thresholds)
	})
}

// The checkout success rate comes from the simulated customers'
// checkouts over the window.
func TestCheckoutSuccessRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ok, failed int64
		load := func() loadgen.Stats {
			return loadgen.Stats{Rate: 20, Actions: map[string]loadgen.ActionStats{loadgen.ActionCheckout: {OK: ok, Failed: failed}}}
		}
		d := dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics(), Load: load})
		f := d.Sample()
		assert.Nil(t, f.Checkout.SuccessRate, "nothing measured yet")
		time.Sleep(5 * time.Second)
		ok, failed = 45, 5
		f = d.Sample()
		require.NotNil(t, f.Checkout.SuccessRate)
		assert.Equal(t, 0.9, *f.Checkout.SuccessRate)
		assert.Equal(t, 10.0, f.Checkout.Rate)
		assert.Equal(t, f.Checkout.SuccessRate, f.Point.CheckoutSuccess)
	})
}

func TestHistoryIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics(), History: 5})
		for range 12 {
			d.Sample()
			time.Sleep(time.Second)
		}
		h := d.History()
		require.Len(t, h, 5)
		for i := 1; i < len(h); i++ {
			assert.Equal(t, time.Second, h[i].Time.Sub(h[i-1].Time), "oldest first, one a second")
		}
		assert.Equal(t, time.Now().Add(-time.Second), h[4].Time, "the newest kept is the last sample")
	})
}

// flushRecorder is a ResponseWriter whose Flush hands what was written
// so far to a reader, as a client would see it.
type flushRecorder struct {
	mu      sync.Mutex
	header  http.Header
	buf     strings.Builder
	flushed []string
}

func (f *flushRecorder) Header() http.Header { return f.header }
func (f *flushRecorder) WriteHeader(int)     {}
func (f *flushRecorder) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(b)
}
func (f *flushRecorder) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed = append(f.flushed, f.buf.String())
	f.buf.Reset()
}

func (f *flushRecorder) events(t *testing.T) []dashboard.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []dashboard.Event
	for _, chunk := range f.flushed {
		sc := bufio.NewScanner(strings.NewReader(chunk))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev dashboard.Event
				require.NoError(t, json.Unmarshal([]byte(data), &ev))
				out = append(out, ev)
			}
		}
	}
	return out
}

func TestEventsOnePerTickUntilTheClientLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		log := scenario.NewLog(0)
		log.Add(scenario.KindLoad, "test", "before the stream")
		status := func() scenario.Status { return scenario.Status{State: scenario.StateIdle} }
		d := dashboard.New(dashboard.Config{Metrics: m, Log: log, Status: status, Labs: []string{"lab line"}})
		d.Start()
		defer d.Close()

		ctx, cancel := context.WithCancel(context.Background())
		w := &flushRecorder{header: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/dashboard/events?after=1", nil).WithContext(ctx))
		}()
		synctest.Wait()
		assert.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
		assert.Empty(t, w.events(t), "no event before the first tick")

		record(m, "payment", "POST /charges", 200, 10, time.Millisecond)
		time.Sleep(time.Second)
		synctest.Wait()
		log.Add(scenario.KindFaultSet, "test", "fault set: payment=hang")
		time.Sleep(2 * time.Second)
		synctest.Wait()

		evs := w.events(t)
		require.Len(t, evs, 3, "one event per tick")
		for i, ev := range evs {
			require.NotNil(t, ev.Frame, i)
			assert.Len(t, ev.Frame.Edges, len(dashboard.Edges), i)
			assert.Equal(t, []string{"lab line"}, ev.Labs, i)
			require.NotNil(t, ev.Scenario, i)
			assert.Equal(t, scenario.StateIdle, ev.Scenario.State, i)
		}
		assert.Empty(t, evs[0].Changes, "after=1: the change before the stream is not repeated")
		require.Len(t, evs[1].Changes, 1, "the change logged since the previous event")
		assert.Equal(t, "fault set: payment=hang", evs[1].Changes[0].Description)
		assert.Empty(t, evs[2].Changes, "each change is sent once")
		assert.Equal(t, evs[0].Frame.Time.Add(time.Second), evs[1].Frame.Time)

		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the stream did not end when the client went away")
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Len(t, w.events(t), 3, "nothing is written after the client left")
	})
}

// Close ends the streams still open.
func TestCloseEndsTheStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics()})
		d.Start()
		w := &flushRecorder{header: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/dashboard/events", nil))
		}()
		time.Sleep(1500 * time.Millisecond)
		d.Close()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the stream outlived Close")
		}
	})
}

// The stream works over a real connection, through net/http's flushing.
func TestEventsOverHTTP(t *testing.T) {
	d := dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics(), Interval: 20 * time.Millisecond})
	d.Start()
	defer d.Close()
	srv := httptest.NewServer(d)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/dashboard/events", nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	frames := 0
	for frames < 2 {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if line == "event: frame\n" {
			frames++
		}
	}
	assert.Equal(t, 2, frames)
}

// Every p99 the page shows is the true p99 of the answers in its window,
// within 5%: a 2.04 s timeout reads 2.04 s, not the 5 s bound of the
// histogram bucket it falls in, and answers older than the window leave
// it.
func TestP99IsTheTrueQuantileOfTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		d := dashboard.New(dashboard.Config{Metrics: m})
		d.Sample()
		p99 := func(f *dashboard.Frame, edge string) float64 {
			for _, e := range f.Edges {
				if e.Edge == edge {
					require.NotNil(t, e.P99, "%s has answers in the window but no p99", edge)
					return *e.P99
				}
			}
			t.Fatalf("no edge %s", edge)
			return 0
		}
		within := func(got, want float64, story string) {
			t.Helper()
			assert.InDelta(t, want, got, 0.05*want, "%s: the page shows p99 %.3fs, the true p99 is %.3fs (5%% allowed)", story, got, want)
		}
		// Checkouts cut off at lab 01's 2 s timeout, answered after 2.04 s.
		var wg sync.WaitGroup
		wg.Go(func() { record(m, "payment", "POST /charges", 200, 95, 20*time.Millisecond) })
		wg.Go(func() { record(m, "payment", "POST /charges", 504, 5, 2040*time.Millisecond) })
		wg.Wait()
		time.Sleep(10*time.Second - 2040*time.Millisecond)
		within(p99(d.Sample(), "order->payment"), 2.04, "5 of 100 charges took 2.04 s")

		// A hang of 30 s, then 10 s of quick answers: the hang left the window.
		record(m, "payment", "POST /charges", 504, 3, 30*time.Second)
		f := d.Sample()
		within(p99(f, "order->payment"), 30, "3 answers after 30 s, the only ones in the window")
		for range 10 {
			record(m, "payment", "POST /charges", 200, 10, 7*time.Millisecond)
			time.Sleep(time.Second - 7*time.Millisecond)
			f = d.Sample()
		}
		within(p99(f, "order->payment"), 0.007, "100 answers in 7 ms since the hang ended")

		// The services' p99 in the charts comes from the same window.
		within(*f.Point.P99["payment"], 0.007, "payment's chart")
	})
}

// Each edge names why its calls got no answer over the window, from
// counts kept apart by cause, and a node shows how full it is against its
// limit: a timed-out edge, a hung one, an open breaker and a full
// compartment each look different.
func TestEdgesNameTheirCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		d := dashboard.New(dashboard.Config{Metrics: m})
		pay, orders, menus := m.Edge("order", "payment"), m.Edge("gateway", "order"), m.Edge("gateway", "menu")
		pay.BreakerOpen.Add(100) // long ago: outside the window
		d.Sample()
		time.Sleep(5 * time.Second)
		pay.Timeouts.Add(12)
		pay.Fallbacks.Add(40) // covering the timeouts: the timeouts are the story
		orders.BulkheadFull.Add(64)
		orders.BreakerOpen.Add(3)
		menus.Fallbacks.Add(2)
		// courier hangs: 4 calls waiting, none answered.
		release := make(chan struct{})
		defer close(release)
		in := fooddelivery.NewInstance("courier", 20, m)
		h := in.Route("GET /eta/{restaurantId}", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
		for range 4 {
			go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		}
		synctest.Wait()
		time.Sleep(5 * time.Second)
		f := d.Sample()
		edges := map[string]dashboard.Edge{}
		for _, e := range f.Edges {
			edges[e.Edge] = e
		}
		for name, want := range map[string]string{
			"order->payment":   dashboard.CauseTimeout,
			"gateway->order":   dashboard.CauseBulkheadFull,
			"gateway->menu":    dashboard.CauseFallback,
			"gateway->courier": dashboard.CauseWaiting,
			"gateway->auth":    "",
		} {
			assert.Equal(t, want, edges[name].Cause, "%s: causes %+v, %d in flight", name, edges[name].Causes, edges[name].InFlight)
		}
		assert.Equal(t, dashboard.Causes{Timeouts: 12, Fallbacks: 40}, edges["order->payment"].Causes, "the 100 refusals before the window are not in it")
		assert.Equal(t, dashboard.Causes{BulkheadFull: 64, BreakerOpen: 3}, edges["gateway->order"].Causes)
		if e := edges["gateway->order"]; assert.NotNil(t, e.ErrorRate) {
			assert.Equal(t, 1.0, *e.ErrorRate, "67 calls refused by the caller, none reached order: every call failed")
			assert.Equal(t, "failing", e.Health, "a refused call is a failed one, though the dependency never saw it")
		}
		assert.Equal(t, int64(4), edges["gateway->courier"].InFlight)
		assert.Equal(t, int64(64), f.Totals.BulkheadFull)
		assert.Equal(t, int64(103), f.Totals.BreakerOpen, "totals count since the start")
		for _, n := range f.Nodes {
			if n.Name == "courier" {
				assert.Equal(t, 20, n.Limit, "the courier instance's concurrency limit")
				assert.Equal(t, int64(4), n.InFlight)
			}
		}
	})
}

// Event streams past Config.MaxStreams are refused with 503 and a
// Retry-After, and a closed stream frees its place.
func TestEventStreamsAreCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := dashboard.New(dashboard.Config{Metrics: metrics.NewMetrics(), MaxStreams: 3})
		d.Start()
		defer d.Close()
		var wg sync.WaitGroup
		var cancels []context.CancelFunc
		for range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			cancels = append(cancels, cancel)
			wg.Go(func() {
				d.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/dashboard/events", nil).WithContext(ctx))
			})
		}
		synctest.Wait()
		w := get(t, d, "/dashboard/events")
		assert.Equal(t, http.StatusServiceUnavailable, w.Code, "a fourth stream past the cap of 3")
		assert.Equal(t, "10", w.Header().Get("Retry-After"))
		assert.Contains(t, w.Body.String(), "too many dashboard streams: 3 are open")
		cancels[0]()
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		wg.Go(func() {
			w := httptest.NewRecorder()
			d.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/dashboard/events", nil).WithContext(ctx))
			assert.Equal(t, http.StatusOK, w.Code, "a stream closed: its place is free")
		})
		synctest.Wait()
		cancel()
		for _, c := range cancels[1:] {
			c()
		}
		wg.Wait()
	})
}

// In a Codespace the dashboard is reached through the forwarded host
// (https://NAME-8080.app.github.dev): with it allowed (sameorigin.
// SetForwarded, cmd/fooddelivery's -allow-host), a page served there and
// its own fetches are answered, while a forged Origin, plain http from
// that name, a neighbour's forwarded host, a name that only begins like
// it and a cross-site fetch are still refused.
func TestGuardTakesTheForwardedHostAndNothingElse(t *testing.T) {
	const fwd = "fluffy-space-8080.app.github.dev"
	require.NoError(t, sameorigin.SetForwarded(strings.ToUpper(fwd)))
	t.Cleanup(func() { require.NoError(t, sameorigin.SetForwarded()) })
	page := guardedPage(t)
	send := func(host string, header map[string]string) *httptest.ResponseRecorder {
		return page("/?view=room", host, header)
	}
	for name, c := range map[string]struct {
		host   string
		header map[string]string
	}{
		"the forwarded host":              {fwd, nil},
		"the forwarded host with :443":    {fwd + ":443", nil},
		"its own fetch":                   {fwd, map[string]string{"Origin": "https://" + fwd, "Sec-Fetch-Site": "same-origin"}},
		"loopback, as before":             {"127.0.0.1:8080", nil},
		"a navigation typed in by a user": {fwd, map[string]string{"Sec-Fetch-Site": "none"}},
	} {
		assert.Equal(t, http.StatusOK, send(c.host, c.header).Code, name)
	}
	for name, c := range map[string]struct {
		host   string
		header map[string]string
	}{
		"a forged Origin":             {fwd, map[string]string{"Origin": "https://attacker.example"}},
		"plain http from the name":    {fwd, map[string]string{"Origin": "http://" + fwd}},
		"a neighbour's Codespace":     {"other-space-8080.app.github.dev", nil},
		"a name that begins like it":  {fwd + ".attacker.example", nil},
		"the name on another port":    {fwd + ":8080", nil},
		"an unknown Host":             {"attacker.example", nil},
		"a cross-site fetch":          {fwd, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		"its Origin from another app": {"127.0.0.1:8080", map[string]string{"Origin": "https://" + fwd + ".attacker.example"}},
	} {
		assert.Equal(t, http.StatusForbidden, send(c.host, c.header).Code, name)
	}
	for _, bad := range []string{"", "localhost", "*.app.github.dev", "https://x-8080.app.github.dev", "x-8080.app.github.dev:443", "10.0.0.1", "-x.app.github.dev", "x_y.app.github.dev"} {
		assert.Error(t, sameorigin.SetForwarded(bad), "SetForwarded(%q)", bad)
	}
	assert.Equal(t, http.StatusOK, send(fwd, nil).Code, "a refused name leaves what was allowed as it was")
}
