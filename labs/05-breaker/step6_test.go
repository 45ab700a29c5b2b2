package breaker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

func TestStep6EveryStateChangeIsSeen(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 6}, func(t *testing.T) {
		var logs labtest.SyncBuffer
		rec := &transitions{}
		sys, cb := start(t, breaker.Settings{
			Name:          "order->payment",
			Logger:        slog.New(slog.NewJSONHandler(&logs, nil)),
			OnStateChange: rec.record,
		})
		rec.mu.Lock()
		rec.edge = sys.Metrics.Edge("order", "payment")
		rec.mu.Unlock()

		if n, s := trip(t, sys, 5), cb.State(); s != breaker.Open {
			t.Fatalf("step 6: 5 orders were placed while payment answered 503; %d of their charges reached payment and the "+
				"breaker is %v; it must be open before this test can look at its changes (step 1).", n, s)
		}
		halfOpenAfter(t, 6, cb, openFor, "5 orders failed and opened the breaker") // a dashboard looks: half-open
		if got := rec.list(); len(got) != 2 {
			t.Fatalf("step 6: the breaker opened, and %v later State() said half-open; Settings.OnStateChange had been called "+
				"%d times: %q. The change happens when State() computes it, so it is reported there and then, not "+
				"when the next call arrives.", openFor, len(got), got)
		}
		setPayment(t, sys, faults.Fault{})
		_, err := place(sys)
		require.NoError(t, err, "step 6: payment recovered and the open period was over, yet the trial order failed")

		want := []string{"order->payment: closed -> open", "order->payment: open -> half-open", "order->payment: half-open -> closed"}
		if got := rec.list(); !slices.Equal(got, want) {
			t.Fatalf("step 6: the breaker opened, became half-open %v later, and closed after a successful trial; "+
				"Settings.OnStateChange was called %d times: %q. Want every change, in order: %q. "+
				"The change to half-open happens when the state is computed: report it there too.", openFor, len(got), got, want)
		}

		type record struct{ Level, Msg, Breaker, From, To string }
		var changes []record
		for line := range strings.Lines(logs.String()) {
			var r record
			if json.Unmarshal([]byte(line), &r) == nil && r.To != "" {
				changes = append(changes, r)
			}
		}
		var got []string
		for _, r := range changes {
			got = append(got, fmt.Sprintf("%s: %s -> %s", r.Breaker, r.From, r.To))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step 6: the breaker changed state 3 times; Settings.Logger received %d records with a \"to\" attribute: %q. "+
				"Want one per change, with attributes breaker, from and to (State.String()): %q.", len(changes), got, want)
		}
		for i, r := range changes {
			level := slog.LevelInfo
			if r.To == breaker.Open.String() {
				level = slog.LevelWarn
			}
			if r.Msg != "circuit breaker state changed" || r.Level != level.String() {
				t.Fatalf("step 6: the record of change %d (%s -> %s) has level %s and message %q; want level %s and "+
					"message \"circuit breaker state changed\". An opening is a symptom someone must act on (Warn); "+
					"the other changes are news (Info). A fixed message lets a log query find every change.",
					i+1, r.From, r.To, r.Level, r.Msg, level)
			}
		}

		// Per-endpoint breakers (step 5) say which endpoint failed.
		endpoints := &transitions{}
		orders := breaker.NewOrderClient(sys.Orders(), breaker.Settings{Name: "order", Logger: quiet, OnStateChange: endpoints.record})
		require.NoError(t, sys.Faults.Set("order", "GET /reports/daily", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")
		require.NoError(t, sys.Faults.Set("order", "POST /orders", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")
		require.NoError(t, sys.Faults.Set("order", "GET /orders/{id}", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")
		received := func(route string) int64 { return sys.Metrics.Route("order", route).Received.Load() }
		before := map[string]int64{}
		for _, route := range []string{"GET /reports/daily", "POST /orders", "GET /orders/{id}"} {
			before[route] = received(route)
		}
		for range 5 {
			orders.DailyReport(context.Background(), time.Time{})
			orders.PlaceOrder(context.Background(), "alice", pizza)
			orders.Order(context.Background(), "ord-1")
		}
		reached := func(route string) int64 { return received(route) - before[route] }
		want = []string{"order GET /reports/daily: closed -> open", "order POST /orders: closed -> open", "order GET /orders/{id}: closed -> open"}
		if got := endpoints.list(); !slices.Equal(got, want) {
			t.Fatalf("step 6: the daily report, placing an order and looking one up were each called 5 times (in turn) "+
				"through NewOrderClient(..., Settings{Name: \"order\"}) while each answered 500; %d, %d and %d of those calls "+
				"reached them. Its breakers reported %q. Want %q: each endpoint's breaker is named Settings.Name, a space, "+
				"and the route as the order service spells it (step 5), so that the log says which endpoint is failing.",
				reached("GET /reports/daily"), reached("POST /orders"), reached("GET /orders/{id}"), got, want)
		}
	})
}

func TestStep6ANilLoggerLogsToTheDefault(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 6}, func(t *testing.T) {
		var logs labtest.SyncBuffer
		// slog.SetDefault also redirects the log package: restore both.
		oldDefault, oldWriter, oldFlags := slog.Default(), log.Writer(), log.Flags()
		defer func() {
			slog.SetDefault(oldDefault)
			log.SetOutput(oldWriter)
			log.SetFlags(oldFlags)
		}()
		slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))

		cb := breaker.New(breaker.Settings{Name: "nil-logger"}) // Logger nil
		n, s := fail(cb, 5), cb.State()
		if s != breaker.Open {
			t.Fatalf("step 6: 5 calls were made through a new breaker, %d of them admitted, each failing with ErrUnavailable, "+
				"and the breaker is %v; it must open (step 1)", n, s)
		}
		if out := logs.String(); !strings.Contains(out, `"breaker":"nil-logger"`) {
			t.Fatalf("step 6: a breaker with a nil Settings.Logger opened after %d failed calls, and slog.Default() received "+
				"%d records, none naming the breaker. nil means slog.Default(): the application's logger, not silence.",
				n, strings.Count(out, "\n"))
		}
	})
}
