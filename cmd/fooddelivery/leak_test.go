package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/scenario"
)

// internalText is what no answer a customer gets may contain: an address
// of the system's inside, a Go error chain, a stack, or an instance's
// name (the menu replicas' host names).
var internalText = []string{"http://", "https://", "goroutine ", "context deadline exceeded", "context canceled",
	"dial ", "connection reset", "EOF", "menu-1", "menu-2", "menu-3", ".go:", "127.0.0.1", "localhost",
	"order-service", "memnet", "panic", "struct field", "fooddelivery.", "*url.", "*errors."}

// leakScan reads every answer the customers get from the gateway, and
// every answer each service writes, and remembers the first few that
// carry internal text.
type leakScan struct {
	base http.RoundTripper

	mu     sync.Mutex
	seen   int
	leaks  []string
	leaked int
}

func (s *leakScan) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, nil // cut short: the customer sees the same error
	}
	s.check("the gateway's answer to "+r.Method+" "+r.URL.Path, body)
	return resp, nil
}

// answered scans an answer a service wrote (system.Config.Answered).
func (s *leakScan) answered(instance, route string, status int, body []byte) {
	s.check(instance+"'s answer to "+route, body)
}

// check scans one answer, body, described by what.
func (s *leakScan) check(what string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	for _, bad := range internalText {
		if bytes.Contains(body, []byte(bad)) {
			s.leaked++
			if len(s.leaks) < 3 {
				s.leaks = append(s.leaks, "\""+bad+"\" in "+what+": "+string(body[:min(len(body), 400)]))
			}
			break
		}
	}
}

// answers returns how many answers s has scanned.
func (s *leakScan) answers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// report fails t when an answer carried internal text.
func (s *leakScan) report(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaked > 0 {
		t.Errorf("%d of the %d answers the customers and the services got carry internal text (an address, a Go error, an instance's name), for example:\n  %s",
			s.leaked, s.seen, strings.Join(s.leaks, "\n  "))
	}
}

// oddRequests are what a customer who makes every mistake sends the
// gateway: a declined card, an unknown card, restaurant, dish, order or
// token, quantities out of range, a bad review, malformed JSON, GraphQL
// that does not parse, asks for what is not there or gives variables of
// the wrong type. Each is [token, body].
var oddRequests = [][2]string{
	{"tok-alice", `{"query":"mutation { placeOrder(input: {restaurantId: \"luigis\", items: [{dishId: \"luigis-margherita\", quantity: 1}], card: \"tok_declined\"}) { id status } }"}`},
	{"tok-alice", `{"query":"mutation { placeOrder(input: {restaurantId: \"luigis\", items: [{dishId: \"luigis-margherita\", quantity: 1}], card: \"tok_stolen\"}) { id status } }"}`},
	{"tok-bob", `{"query":"mutation { placeOrder(input: {restaurantId: \"nowhere\", items: [{dishId: \"luigis-margherita\", quantity: 1}], card: \"tok_visa\"}) { id } }"}`},
	{"tok-bob", `{"query":"mutation { placeOrder(input: {restaurantId: \"luigis\", items: [{dishId: \"sushi\", quantity: 1}], card: \"tok_visa\"}) { id } }"}`},
	{"tok-carol", `{"query":"mutation { placeOrder(input: {restaurantId: \"luigis\", items: [{dishId: \"luigis-margherita\", quantity: 0}], card: \"tok_visa\"}) { id } }"}`},
	{"tok-carol", `{"query":"mutation { placeOrder(input: {restaurantId: \"luigis\", items: [{dishId: \"luigis-margherita\", quantity: 51}], card: \"tok_visa\"}) { id } }"}`},
	{"tok-alice", `{"query":"mutation { submitReview(input: {restaurantId: \"luigis\", stars: 9, text: \"\"}) { id } }"}`},
	{"tok-alice", `{"query":"mutation { submitReview(input: {restaurantId: \"nowhere\", stars: 3, text: \"ok\"}) { id } }"}`},
	{"tok-alice", `{"query":"{ order(id: \"ord-nope\") { id status } }"}`},
	{"tok-mallory", `{"query":"{ order(id: \"ord-1\") { id } }"}`},
	{"", `{"query":"mutation { placeOrder(input: {restaurantId: \"luigis\", items: [], card: \"tok_visa\"}) { id } }"}`},
	{"", `{"query":"{ restaurant(id: \"nowhere\") { name menu { name } } }"}`},
	{"", `{"query":"{ restaurants { `},
	{"", `{"query":"{ restaurants { nope } }"}`},
	{"", `{"query":"query($id: ID!) { restaurant(id: $id) { name } }","variables":{"id":[1,2]}}`},
	{"", `{"query":"{ restaurants { name } }","variables":"x"}`},
	{"", `not json at all`},
}

// oddCustomer sends oddRequests to the gateway at url, one every 200 ms,
// round and round, until ctx is done.
func oddCustomer(ctx context.Context, client *http.Client, url string) {
	for i := 0; ctx.Err() == nil; i++ {
		r := oddRequests[i%len(oddRequests)]
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(r[1]))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if r[0] != "" {
			req.Header.Set("Authorization", "Bearer "+r[0])
		}
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// refusals4xx make services refuse some of the calls they are sent, beside
// what a scenario does, so that refusals' words (which the gateway passes
// on) are scanned too.
var refusals4xx = []string{
	"menu:GET /restaurants/{id}/menu=error,status=400,p=0.1",
	"menu:GET /restaurants=error,status=404,p=0.1",
	"menu:POST /reviews=error,status=422,p=0.3",
	"order:POST /orders=error,status=422,p=0.05",
	"order:GET /orders/{id}=error,status=404,p=0.2",
	"payment:POST /charges=error,status=402,p=0.05",
	"courier:GET /eta/{restaurantId}=error,status=400,p=0.1",
}

// Every built-in scenario, with every lab's reference and with every lab's
// naive starting point, with services refusing some calls and a customer
// who makes every mistake beside the usual ones: no answer any customer
// gets carries an internal address, a Go error or stack, or an instance's
// name.
func TestNoAnswerCarriesInternalText(t *testing.T) {
	if testing.Short() {
		t.Skip("plays every scenario twice")
	}
	for _, sc := range scenario.Builtin() {
		if sc.Processes {
			continue // it kills a process, which one process cannot play
		}
		for _, labs := range []string{"all=solution", "all=naive"} {
			t.Run(sc.Name+"/"+labs, func(t *testing.T) {
				res := runSystem(t, runSpec{labs: []string{labs}, scenario: sc.Name, load: 20, faults: refusals4xx, odd: true})
				if res.scanned < 100 {
					t.Errorf("only %d answers were scanned: the run did not play", res.scanned)
				}
				if testing.Verbose() {
					t.Logf("%d answers scanned", res.scanned)
				}
			})
		}
	}
}
