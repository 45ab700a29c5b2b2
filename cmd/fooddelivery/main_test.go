package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery/courier"
	"github.com/gophereats/resilience/fooddelivery/dispatch"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/internal/compose"
)

// These are smoke tests of the command (the one place where tests may use
// real TCP on 127.0.0.1 and real time): each starts run on a free port, talks to
// the gateway with a real http.Client, and stops run by cancelling its
// context.

const bannerPrefix = "GraphQL endpoint: "

// bannerWriter is the stdout given to run. It records everything and closes
// ready once the banner's last line has been written.
type bannerWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	once  sync.Once
}

func (w *bannerWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), "Press Ctrl-C to stop.") {
		w.once.Do(func() { close(w.ready) })
	}
	return n, err
}

func (w *bannerWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// running is one run of the command started by startRun.
type running struct {
	url    string        // the GraphQL endpoint read from the banner
	out    *bannerWriter // run's stdout
	stop   func() error  // cancels run's context and returns what run returned
	client *http.Client  // a real client on TCP with a generous timeout
}

// startRun calls run with args plus -addr 127.0.0.1:0 and waits for the
// banner. The run is stopped at the end of the test if the test did not
// stop it.
func startRun(t *testing.T, args ...string) *running {
	t.Helper()
	return startRunLogging(t, io.Discard, args...)
}

// startRunLogging is startRun with run's stderr, the services' log, going
// to stderr.
func startRunLogging(t *testing.T, stderr io.Writer, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &bannerWriter{ready: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), out, stderr)
	}()
	r := &running{out: out, client: &http.Client{Timeout: 10 * time.Second}}
	var result error
	var once sync.Once
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(10 * time.Second):
				result = errors.New("run did not return within 10s of its context being cancelled")
			}
		})
		return result
	}
	t.Cleanup(func() {
		r.stop()
		r.client.CloseIdleConnections()
	})

	select {
	case <-out.ready:
	case err := <-done:
		t.Fatalf("run returned before printing its banner: %v\nstdout:\n%s", err, out)
	case <-time.After(10 * time.Second):
		t.Fatalf("no banner within 10s; stdout so far:\n%s", out)
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), bannerPrefix); ok {
			r.url = strings.TrimSpace(rest)
		}
	}
	if !strings.HasPrefix(r.url, "http://127.0.0.1:") || strings.HasSuffix(r.url, ":0/graphql") {
		t.Fatalf("the banner should give the bound loopback URL on a line starting %q; got %q in:\n%s", bannerPrefix, r.url, out)
	}
	return r
}

// post sends body to the gateway as a curl user would, with the bearer
// token when it is not "", and returns the status and the decoded GraphQL
// response.
func (r *running) post(t *testing.T, token, body string) (int, gateway.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s %s: %v", r.url, body, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer to %s: %v", body, err)
	}
	var gr gateway.Response
	if err := json.Unmarshal(raw, &gr); err != nil {
		t.Fatalf("the answer to %s is not a GraphQL response (HTTP %d): %v\n%s", body, resp.StatusCode, err, raw)
	}
	return resp.StatusCode, gr
}

// query wraps a GraphQL document in the JSON body of a request.
func query(doc string, vars map[string]any) string {
	b, err := json.Marshal(gateway.Request{Query: doc, Variables: vars})
	if err != nil {
		panic(err)
	}
	return string(b)
}

const placeOrder = `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { id status totalCents } }`

func orderInput() map[string]any {
	return map[string]any{"input": map[string]any{
		"restaurantId": system.SampleRestaurant,
		"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 2}},
		"card":         "tok_visa",
	}}
}

func TestRunServesTheSystemOnLoopbackUntilCancelled(t *testing.T) {
	r := startRun(t)
	for _, want := range []string{"curl ", "Authorization: Bearer " + system.SampleToken, system.SampleDish, "faults:           none"} {
		if !strings.Contains(r.out.String(), want) {
			t.Errorf("the banner should contain %q; it is:\n%s", want, r.out)
		}
	}

	t.Run("lists the restaurants", func(t *testing.T) {
		status, resp := r.post(t, "", query(`{ restaurants { id name } }`, nil))
		var data struct{ Restaurants []struct{ ID, Name string } }
		if err := resp.Decode(&data); err != nil || status != http.StatusOK {
			t.Fatalf("restaurants: HTTP %d, %v; want 200 with data", status, err)
		}
		found := false
		for _, rest := range data.Restaurants {
			found = found || rest.ID == system.SampleRestaurant
		}
		if !found {
			t.Errorf("restaurants: got %v, want a list that includes %q", data.Restaurants, system.SampleRestaurant)
		}
	})

	t.Run("answers a malformed query with GraphQL errors, not a 500", func(t *testing.T) {
		for _, body := range []string{
			query(`{ restaurants { name `, nil), // GraphQL syntax error
			`{"query": `,                        // not even JSON
		} {
			status, resp := r.post(t, "", body)
			if status >= 500 || len(resp.Errors) == 0 {
				t.Errorf("%s: got HTTP %d with %d errors; want a status below 500 and an \"errors\" list", body, status, len(resp.Errors))
			}
		}
	})

	t.Run("places an order for a signed-in user", func(t *testing.T) {
		status, resp := r.post(t, system.SampleToken, query(placeOrder, orderInput()))
		var data struct{ PlaceOrder struct{ ID, Status string } }
		if err := resp.Decode(&data); err != nil {
			t.Fatalf("placeOrder: HTTP %d, %v", status, err)
		}
		if data.PlaceOrder.Status != "PLACED" {
			t.Errorf("placeOrder: got status %q, want PLACED", data.PlaceOrder.Status)
		}
	})

	if err := r.stop(); err != nil {
		t.Fatalf("after its context was cancelled run returned %v, want nil", err)
	}
	if !strings.HasSuffix(r.out.String(), "stopped\n") {
		t.Errorf("run should end its output with a \"stopped\" line; it ended:\n%s", r.out)
	}
	if _, err := r.client.Post(r.url, "application/json", strings.NewReader(query(`{ restaurants { id } }`, nil))); err == nil {
		t.Errorf("the gateway still answered after run returned; run should close the system")
	}
}

func TestRunAppliesFaultFlags(t *testing.T) {
	r := startRun(t, "-fault", "payment=error,status=503")
	if !strings.Contains(r.out.String(), "payment=error,status=503") {
		t.Errorf("the banner should list the active fault; it is:\n%s", r.out)
	}

	status, resp := r.post(t, system.SampleToken, query(placeOrder, orderInput()))
	if status >= 500 {
		t.Errorf("placeOrder with payment answering 503: got HTTP %d; the gateway should answer a GraphQL error, not a 5xx", status)
	}
	if resp.ErrorAt("placeOrder") == nil {
		t.Errorf("placeOrder with payment answering 503: got data %s and errors %+v; want an error at path placeOrder", resp.Data, resp.Errors)
	}
}

func TestRunPlacesAnOrderWithEveryLabsSolution(t *testing.T) {
	r := startRun(t, "-lab", "all=solution", "-fast")
	if !strings.Contains(r.out.String(), "05 breaker        solution") {
		t.Errorf("the banner should list lab 05's solution; it is:\n%s", r.out)
	}
	status, resp := r.post(t, system.SampleToken, query(placeOrder, orderInput()))
	var data struct{ PlaceOrder struct{ ID, Status string } }
	if err := resp.Decode(&data); err != nil || data.PlaceOrder.Status != "PLACED" {
		t.Errorf("placeOrder with every lab's solution: HTTP %d, %v, %+v; want status PLACED", status, err, data.PlaceOrder)
	}
}

func TestRunRejectsBadFlagsBeforeStarting(t *testing.T) {
	tests := []struct {
		name string
		args []string
		is   error // a sentinel the error must wrap, if any
	}{
		{"an unknown fault kind", []string{"-fault", "payment=explode"}, faults.ErrInvalid},
		{"a fault on a service that does not exist", []string{"-fault", "paymnt=hang"}, nil},
		{"an address on every interface", []string{"-addr", "0.0.0.0:8080"}, nil},
		{"an address without a port", []string{"-addr", "127.0.0.1"}, nil},
		{"another loopback address, which the admin pages would refuse", []string{"-addr", "127.0.0.2:8080"}, nil},
		{"a port out of range", []string{"-addr", "localhost:80000"}, nil},
		{"two faults on one target", []string{"-fault", "payment=hang", "-fault", "payment=error,status=500"}, nil},
		{"a fault that would never fire", []string{"-fault", "payment=error,status=500,p=0"}, nil},
		{"a scenario that does not exist", []string{"-scenario", "payment-gone"}, nil},
		{"a load past the cap", []string{"-load", "5000"}, nil},
		{"a lab that does not exist", []string{"-lab", "10=solution"}, nil},
		{"a choice that does not exist", []string{"-lab", "05=clever"}, nil},
		{"a choice without its lab (the old form)", []string{"-lab", "solution"}, nil},
		{"a learner lab without its build tag", []string{"-lab", "05=learner"}, nil},
		{"two labs that would both retry the charge", []string{"-lab", "03=solution", "-lab", "04=solution"}, nil},
		{"a negative order limit", []string{"-order-limit", "-1"}, nil},
		{"an unknown flag", []string{"-verbose-ish"}, nil},
		{"a stray argument", []string{"payment=hang"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "a learner lab without its build tag" && compose.HaveLearner(5) {
				t.Skip("built with -tags learner05")
			}
			err := runRefused(t, tt.args)
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("run %q: got %v, want an error wrapping %v", tt.args, err, tt.is)
			}
		})
	}
}

// runRefused runs the command with args, which must be refused with a
// usage error (exit status 2) before anything starts or prints; it
// returns the error.
func runRefused(t *testing.T, args []string) error {
	t.Helper()
	var stdout bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were run to start the system, it would stop at once
	err := run(ctx, args, &stdout, io.Discard)
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Fatalf("run %q: got error %v, want a usage error (exit status 2)", args, err)
	}
	if stdout.Len() > 0 {
		t.Errorf("run %q printed %q; a bad flag must stop it before anything starts", args, stdout.String())
	}
	return err
}

func TestUsageNamesEveryFlag(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout, io.Discard); err != nil {
		t.Fatalf("run -h: %v", err)
	}
	for _, want := range []string{"-addr", "-fault", "-seed", "-order-limit", "-lab NN=choice", "all=solution", "-fast",
		"go run ./cmd/workshop live NN", "Where labs meet"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the usage text should mention %q; it is:\n%s", want, stdout.String())
		}
	}
}

func TestRunPlanFlagRunsAGameDayPlan(t *testing.T) {
	t.Run("-plan reference is accepted and the banner names it", func(t *testing.T) {
		r := startRun(t, "-plan", "reference")
		if !strings.Contains(r.out.String(), "game-day plan:    reference (-plan)") {
			t.Errorf("the banner should name the game-day plan; it is:\n%s", r.out)
		}
		if err := r.stop(); err != nil {
			t.Fatalf("after its context was cancelled run -plan reference returned %v, want nil", err)
		}
	})

	tests := []struct {
		name string
		args []string
		says []string
	}{
		{"a plan that does not exist lists the plans", []string{"-plan", "nosuch"},
			[]string{"-plan \"nosuch\"", "no such plan", "the plans are " + strings.Join(planNames(), ", "), "learner", "reference"}},
		{"the learner's plan without the learner10 build tag", []string{"-plan", "learner"},
			[]string{"-plan learner", "labs/10-game-day", "go run ./cmd/workshop live 10"}},
		{"a plan with -lab", []string{"-plan", "reference", "-lab", "05=solution"},
			[]string{"-plan reference and -lab 05=solution", "give one of the two"}},
		{"the live game day without a plan", []string{"-scenario", "game-day"},
			[]string{"-scenario game-day", "needs a plan", "-plan reference", "workshop live 10 -scenario game-day"}},
		{"a plan with -order-limit", []string{"-plan", "reference", "-order-limit", "100"},
			[]string{"-plan reference and -order-limit", "capacity is fixed", "40"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := plans["learner"]; ok && tt.args[1] == "learner" {
				t.Skip("built with -tags learner10")
			}
			err := runRefused(t, tt.args)
			for _, want := range tt.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("run %q: the error should say %q; it is: %v", tt.args, want, err)
				}
			}
		})
	}
}

// Every state is in memory, so a restart must not hand out an order id of
// an earlier run: the ids carry the run's start time.
func TestOrderIDsNameTheRun(t *testing.T) {
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	first, again := runPrefix(start), runPrefix(start.Add(time.Millisecond))
	assert.NotEqual(t, first, again, "a restart a millisecond later")
	assert.Regexp(t, `^ord-[0-9a-z]+-$`, first)
	s := order.NewStore()
	s.Prefix = first
	assert.Equal(t, first+"1", s.NewID())
}

// The bounds -h and the README give for a system left running are the
// code's.
func TestMemoryBoundsInTheUsageAreTheCodes(t *testing.T) {
	var stdout strings.Builder
	if err := run(context.Background(), []string{"-h"}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	thousands := func(n int) string { return fmt.Sprintf("%d,%03d", n/1000, n%1000) }
	same := map[string][]int{
		thousands(order.DefaultMaxOrders): {order.DefaultMaxOrders, payment.DefaultMaxCharges, courier.DefaultMaxAssignments},
		thousands(menu.MaxReviews):        {menu.MaxReviews, dispatch.MaxDeadLetters},
	}
	for text, values := range same {
		for _, v := range values {
			if thousands(v) != text {
				t.Errorf("-h and the README say %s for a bound that is %d in the code", text, v)
			}
		}
		if !strings.Contains(stdout.String(), text+" most recent") {
			t.Errorf("-h should give the bound %s", text)
		}
		if !strings.Contains(string(readme), text+" most recent") {
			t.Errorf("the README should give the bound %s", text)
		}
	}
}
