package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/admin"
	"github.com/gophereats/resilience/fooddelivery/checker"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// host is what a local tool puts in Host for a gateway on port 8080.
const host = "127.0.0.1:8080"

// rig is a system on memnet with the admin API mounted at /admin, as
// cmd/fooddelivery mounts it, with a load generator, a game-day switch and
// a scenario runner. Build it inside a bubble.
type rig struct {
	sys *system.System
	gen *loadgen.Generator
	log *scenario.Log
}

func newRig(t *testing.T, configure ...func(*admin.Config)) *rig {
	t.Helper()
	sys, err := system.Start(system.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sys.Close() })
	gen, err := loadgen.New(loadgen.Config{URL: sys.GatewayURL(), Client: sys.HTTPClient(), Seed: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- gen.Run(ctx) }()
	log := scenario.NewLog(0)
	ctl := &scenario.Controls{Faults: sys.Faults, Load: gen, GameDay: &fooddelivery.GameDay{}, Log: log}
	run, err := scenario.NewRunner(ctl, 1)
	require.NoError(t, err)
	t.Cleanup(func() {
		run.Close()
		cancel()
		<-done
	})
	cfg := admin.Config{Addr: host, Controls: ctl, Runner: run}
	for _, c := range configure {
		c(&cfg)
	}
	h, err := admin.New(cfg)
	require.NoError(t, err)
	require.NoError(t, sys.Mount("/admin", h))
	return &rig{sys: sys, gen: gen, log: log}
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// code is the error code of an error answer, or "".
func (r reply) code() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r reply) message() string {
	e, _ := r.body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// send sends method path with body to the gateway's server on memnet.
// Headers default to Host 127.0.0.1:8080 and, for a change with a body,
// Content-Type application/json; hdr adds or overrides them ("" deletes).
func (rg *rig) send(t *testing.T, method, path, body string, hdr ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, memnet.ServiceURL("gateway")+path, rd)
	require.NoError(t, err)
	req.Host = host
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		switch {
		case hdr[i] == "Host":
			req.Host = hdr[i+1]
		case hdr[i+1] == "":
			req.Header.Del(hdr[i])
		default:
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := rg.sys.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), "%s %s answers JSON: %s", method, path, raw)
	require.NoError(t, json.Unmarshal(raw, &r.body), "%s %s: %s", method, path, raw)
	return r
}

func (rg *rig) specs(t *testing.T) []string {
	t.Helper()
	r := rg.send(t, "GET", "/admin/faults", "")
	require.Equal(t, 200, r.status, r.raw)
	out := []string{}
	for _, rl := range r.body["rules"].([]any) {
		out = append(out, rl.(map[string]any)["spec"].(string))
	}
	return out
}

// The guard refuses what a web page in the user's browser could send, and
// says why; a refused change changes nothing.
func TestGuardRefusesWhatAWebPageCouldSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		const add = `{"spec": "payment=hang,max=5s"}`
		for _, tc := range []struct {
			name   string
			method string
			body   string
			hdr    []string
			status int
			code   string
			says   string
		}{
			{"a foreign Host (DNS rebinding)", "POST", add, []string{"Host", "evil.example:8080"}, 403, "host_refused", `"evil.example:8080"`},
			{"a loopback Host with the wrong port", "POST", add, []string{"Host", "127.0.0.1:9090"}, 403, "host_refused", "port 8080"},
			{"a Host without a port", "GET", "", []string{"Host", "localhost"}, 403, "host_refused", "127.0.0.1:8080, localhost:8080, [::1]:8080"},
			{"the in-memory name", "GET", "", []string{"Host", "gateway"}, 403, "host_refused", ""},
			{"a cross-origin page", "POST", add, []string{"Origin", "http://evil.example"}, 403, "cross_origin", `"http://evil.example"`},
			{"a page on another local port", "POST", add, []string{"Origin", "http://localhost:3000"}, 403, "cross_origin", ""},
			{"an https origin", "GET", "", []string{"Origin", "https://127.0.0.1:8080"}, 403, "cross_origin", ""},
			{"a sandboxed page (Origin null)", "POST", add, []string{"Origin", "null"}, 403, "cross_origin", ""},
			{"a cross-site fetch", "POST", add, []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross_site", "another site"},
			{"a same-site fetch", "GET", "", []string{"Sec-Fetch-Site", "same-site"}, 403, "cross_site", ""},
			{"a change without Content-Type", "POST", add, []string{"Content-Type", ""}, 415, "unsupported_media_type", "application/json"},
			{"a form post", "POST", add, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", ""},
			{"text/plain, which needs no preflight", "POST", add, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", `"text/plain"`},
			{"a removal without Content-Type", "DELETE", "", []string{"Content-Type", ""}, 415, "unsupported_media_type", ""},
			{"a CORS preflight", "OPTIONS", "", []string{"Content-Type", "", "Origin", "http://evil.example"}, 403, "cross_origin", ""},
		} {
			r := rg.send(t, tc.method, "/admin/faults", tc.body, tc.hdr...)
			assert.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.raw)
			assert.Equal(t, tc.code, r.code(), tc.name)
			assert.Contains(t, r.message(), tc.says, tc.name)
			assert.Empty(t, r.header.Get("Access-Control-Allow-Origin"), tc.name)
		}
		assert.Empty(t, rg.specs(t), "no refused change went through")

		for _, ok := range [][]string{
			{"Host", "localhost:8080"},
			{"Host", "LOCALHOST:8080"},
			{"Host", "[::1]:8080"},
			{"Origin", "http://127.0.0.1:8080", "Sec-Fetch-Site", "same-origin"},
			{"Origin", "http://[::1]:8080"},
			{"Sec-Fetch-Site", "none"},
			{"Content-Type", "application/json; charset=utf-8"},
		} {
			r := rg.send(t, "POST", "/admin/faults", add, ok...)
			assert.Equal(t, 201, r.status, "%v: %s", ok, r.raw)
		}
	})
}

// A rule on a route no service serves is refused, and the message lists
// the routes there are.
func TestFaultOnARouteNothingServesIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		r := rg.send(t, "POST", "/admin/faults", `{"spec": "payment:POST /charge=hang"}`)
		assert.Equal(t, 400, r.status)
		assert.Equal(t, "unknown_target", r.code())
		assert.Contains(t, r.message(), `payment serves no route "POST /charge"; its routes are "GET /charges", "POST /charges"`)

		r = rg.send(t, "POST", "/admin/faults", `{"spec": "paymnt=hang"}`)
		assert.Equal(t, "unknown_target", r.code())
		assert.Contains(t, r.message(), "auth, courier, gateway, menu, menu-1, menu-2, menu-3, order, payment")

		r = rg.send(t, "POST", "/admin/faults", `{"spec": "payment=explode"}`)
		assert.Equal(t, 400, r.status)
		assert.Equal(t, "invalid_fault", r.code())
		assert.Contains(t, r.message(), "kinds are latency, tail, hang")
		assert.Empty(t, rg.specs(t))

		routes := rg.send(t, "GET", "/admin/faults", "").body["routes"].(map[string]any)
		assert.Equal(t, []any{"GET /charges", "POST /charges"}, routes["payment"], "the listing shows what may be targeted")
	})
}

// Adding a fault over the API breaks what a customer sees; removing it
// mends it; the listing counts the requests it hit.
func TestAddingAndRemovingAFaultChangesWhatARequestSees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		checkout := func() *gateway.Response {
			resp, _, err := rg.sys.GraphQL(context.Background(), system.SampleToken,
				`mutation($in: PlaceOrderInput!) { placeOrder(input: $in) { id status } }`,
				map[string]any{"in": map[string]any{
					"restaurantId": system.SampleRestaurant,
					"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 1}},
					"card":         "tok_visa",
				}})
			require.NoError(t, err)
			return resp
		}
		require.Empty(t, checkout().Errors, "a healthy checkout")

		r := rg.send(t, "POST", "/admin/faults", `{"spec": "payment:POST /charges=error,status=503"}`)
		require.Equal(t, 201, r.status, r.raw)
		assert.Equal(t, "payment:POST /charges=error,status=503", r.body["rule"].(map[string]any)["spec"])
		resp := checkout()
		require.NotEmpty(t, resp.Errors, "the checkout meets the fault")
		assert.Equal(t, gateway.CodeUnavailable, resp.Errors[0].Code())
		rule := rg.send(t, "GET", "/admin/faults", "").body["rules"].([]any)[0].(map[string]any)
		assert.Equal(t, 1.0, rule["applied"])

		r = rg.send(t, "DELETE", "/admin/faults?spec="+queryEscape("payment:POST /charges"), "")
		require.Equal(t, 200, r.status, r.raw)
		assert.Empty(t, checkout().Errors, "mended")

		r = rg.send(t, "DELETE", "/admin/faults?spec="+queryEscape("payment:POST /charges"), "")
		assert.Equal(t, 404, r.status)
		assert.Equal(t, "no_such_rule", r.code())

		// By service and route, in the body, and all at once.
		rg.send(t, "POST", "/admin/faults", `{"spec": "menu-2=latency,fixed=1s"}`)
		rg.send(t, "POST", "/admin/faults", `{"spec": "courier=reset"}`)
		rg.send(t, "POST", "/admin/faults", `{"spec": "order:GET /orders/{id}=error,status=500"}`)
		r = rg.send(t, "DELETE", "/admin/faults", `{"service": "menu-2"}`)
		require.Equal(t, 200, r.status, r.raw)
		r = rg.send(t, "DELETE", "/admin/faults?service=order&route="+queryEscape("GET /orders/{id}"), "")
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, []string{"courier=reset"}, rg.specs(t))
		r = rg.send(t, "DELETE", "/admin/faults?all=true", "")
		require.Equal(t, 200, r.status, r.raw)
		assert.Len(t, r.body["removed"], 1)
		assert.Empty(t, rg.specs(t))

		r = rg.send(t, "DELETE", "/admin/faults", "")
		assert.Equal(t, 400, r.status, "a removal must say what to remove")
		assert.Equal(t, "bad_query", r.code())
	})
}

func queryEscape(s string) string {
	return strings.NewReplacer(" ", "%20", "{", "%7B", "}", "%7D", ":", "%3A").Replace(s)
}

// The load, the game day and the scenarios answer over the API, and the
// change log records every change with its time.
func TestLoadGameDayScenariosAndTheChangeLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		t0 := time.Now()

		r := rg.send(t, "PUT", "/admin/load", `{"rate": 10, "mix": {"menu": 1}}`)
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, 10.0, r.body["rate"])
		time.Sleep(2*time.Second + 50*time.Millisecond) // between two requests, whatever the PUT took
		r = rg.send(t, "GET", "/admin/load", "")
		menu := r.body["actions"].(map[string]any)["menu"].(map[string]any)
		assert.Equal(t, 21.0, menu["sent"], "10 per second for 2 s, from 0 s to 2 s")
		r = rg.send(t, "PUT", "/admin/load", `{"rate": 5000}`)
		assert.Equal(t, "invalid_load", r.code())
		assert.Contains(t, r.message(), "0..1000")
		r = rg.send(t, "PUT", "/admin/load", `{"rate": 5, "mix": {"dance": 1}}`)
		assert.Equal(t, "invalid_load", r.code())
		assert.Equal(t, 10, rg.gen.Rate(), "a refused change changes nothing, not even its valid half")
		rg.send(t, "PUT", "/admin/load", `{"rate": 0}`)

		r = rg.send(t, "PUT", "/admin/gameday", `{"features": {"menu": true, "eta": false}}`)
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, true, r.body["features"].(map[string]any)["menu"])
		r = rg.send(t, "GET", "/admin/gameday", "")
		assert.Equal(t, false, r.body["features"].(map[string]any)["auth"])
		r = rg.send(t, "PUT", "/admin/gameday", `{"features": {"menus": true}}`)
		assert.Equal(t, "unknown_feature", r.code())

		r = rg.send(t, "GET", "/admin/scenarios", "")
		require.Equal(t, 200, r.status)
		assert.Len(t, r.body["scenarios"], 6)
		assert.Equal(t, "idle", r.body["status"].(map[string]any)["state"])
		r = rg.send(t, "POST", "/admin/scenarios/flaky-courier/start", "")
		require.Equal(t, 202, r.status, r.raw)
		r = rg.send(t, "POST", "/admin/scenarios/payment-down/start", "")
		assert.Equal(t, 409, r.status)
		assert.Equal(t, "busy", r.code())
		r = rg.send(t, "POST", "/admin/scenarios/nope/start", "")
		assert.Equal(t, 404, r.status)
		assert.Contains(t, r.message(), "payment-down, slow-menu-replica, flaky-courier, checkout-rush, lost-payment-responses, payment-crash")
		time.Sleep(6 * time.Second)
		assert.Equal(t, []string{"courier=error,status=503,p=0.5"}, rg.specs(t))
		r = rg.send(t, "GET", "/admin/scenario", "")
		st := r.body["status"].(map[string]any)
		assert.Equal(t, "running", st["state"])
		assert.Equal(t, "flaky-courier", st["name"])
		assert.Equal(t, 2.0, st["stepsDone"])
		r = rg.send(t, "POST", "/admin/scenario/stop", "")
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, true, r.body["stopped"])
		assert.Empty(t, rg.specs(t), "stopping clears what the scenario set")

		r = rg.send(t, "GET", "/admin/changes", "")
		var got []string
		for _, c := range r.body["changes"].([]any) {
			c := c.(map[string]any)
			at, err := time.Parse(time.RFC3339Nano, c["time"].(string))
			require.NoError(t, err)
			got = append(got, at.Sub(t0).String()+" "+c["by"].(string)+" "+c["kind"].(string))
		}
		assert.Equal(t, []string{
			"0s admin load", "0s admin load", // rate, then mix
			"2.05s admin load",
			"2.05s admin gameday",
			"2.05s scenario flaky-courier scenario-started",
			"2.05s scenario flaky-courier load",
			"7.05s scenario flaky-courier fault-set",
			"8.05s scenario flaky-courier fault-removed",
			"8.05s scenario flaky-courier load",
			"8.05s scenario flaky-courier scenario-stopped",
		}, got)
		r = rg.send(t, "GET", "/admin/changes?after=8", "")
		assert.Len(t, r.body["changes"], 2)
		r = rg.send(t, "GET", "/admin/changes?after=-1", "")
		assert.Equal(t, "bad_query", r.code())
	})
}

// Bad input gets a JSON error that says what is wrong, never a panic.
func TestBadInputGetsClearErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		for _, tc := range []struct {
			method, path, body string
			status             int
			code               string
		}{
			{"POST", "/admin/faults", `{"spec": `, 400, "bad_json"},
			{"POST", "/admin/faults", `{"spec": "payment=hang", "extra": 1}`, 400, "bad_json"},
			{"POST", "/admin/faults", `{"spec": "payment=hang"} {"spec": "menu=hang"}`, 400, "bad_json"},
			{"POST", "/admin/faults", `[]`, 400, "bad_json"},
			{"POST", "/admin/faults", ``, 400, "bad_json"},
			{"POST", "/admin/faults", `{}`, 400, "invalid_fault"},
			{"POST", "/admin/faults", `{"spec": "=\u0000"}`, 400, "invalid_fault"},
			{"POST", "/admin/faults", `{"spec": "` + strings.Repeat("a", 70_000) + `"}`, 413, "too_large"},
			{"PUT", "/admin/load", `{"rate": "fast"}`, 400, "bad_json"},
			{"PUT", "/admin/load", `{}`, 400, "invalid_load"},
			{"PUT", "/admin/load", `{"mix": {"menu": -1}}`, 400, "invalid_load"},
			{"PUT", "/admin/gameday", `{}`, 400, "unknown_feature"},
			{"PUT", "/admin/gameday", `{"features": {"menu": "yes"}}`, 400, "bad_json"},
			{"POST", "/admin/scenarios/%00/start", ``, 404, "unknown_scenario"},
			{"POST", "/admin/scenario/stop", `{"now": true}`, 400, "bad_json"},
			{"GET", "/admin/nothing", ``, 404, "not_found"},
			{"GET", "/admin/faults/", ``, 404, "not_found"},
			{"PUT", "/admin/faults", `{}`, 405, "method_not_allowed"},
			{"GET", "/admin/scenarios/payment-down/start", ``, 405, "method_not_allowed"},
			{"DELETE", "/admin/faults?all=maybe", ``, 400, "bad_query"},
			{"DELETE", "/admin/faults?route=x", ``, 400, "bad_query"},
		} {
			r := rg.send(t, tc.method, tc.path, tc.body)
			assert.Equal(t, tc.status, r.status, "%s %s %.40s: %s", tc.method, tc.path, tc.body, r.raw)
			assert.Equal(t, tc.code, r.code(), "%s %s %.40s", tc.method, tc.path, tc.body)
			assert.NotEmpty(t, r.message())
		}
		r := rg.send(t, "PUT", "/admin/faults", `{}`)
		assert.Equal(t, "GET, POST, DELETE", r.header.Get("Allow"))

		r = rg.send(t, "GET", "/admin/", "")
		require.Equal(t, 200, r.status)
		assert.Len(t, r.body["routes"], 17)
		assert.Equal(t, 200, rg.send(t, "GET", "/admin", "").status)
		assert.Empty(t, rg.specs(t))
		// After the 413, net/http closes that connection and lingers half a
		// second before it lets go; wait it out on the fake clock.
		time.Sleep(time.Second)
	})
}

func TestNewRefusesABadConfig(t *testing.T) {
	ctl := &scenario.Controls{}
	for _, addr := range []string{"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:http", "127.0.0.1:70000"} {
		_, err := admin.New(admin.Config{Addr: addr, Controls: ctl})
		assert.Error(t, err, addr)
	}
	_, err := admin.New(admin.Config{Addr: host, Controls: ctl})
	assert.Error(t, err, "Controls without a fault injector")
}

func TestCheckAndCrashNeedTheirHooksAndCheckTheirInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		r := rg.send(t, "GET", "/admin/check", "")
		assert.Equal(t, 501, r.status, r.raw)
		r = rg.send(t, "POST", "/admin/crash", `{"service": "payment"}`)
		assert.Equal(t, 409, r.status, r.raw)
		assert.Equal(t, "needs_processes", r.code())
		assert.Contains(t, r.message(), "-processes")
	})
	synctest.Test(t, func(t *testing.T) {
		var crashed []string
		rep := checker.Report{Placed: 3, Charged: 3, DoubleCharges: 1, DoubleChargedIDs: []string{"o-2"}}
		var down bool
		rg := newRig(t, func(c *admin.Config) {
			c.Check = func(context.Context) (checker.Report, error) {
				if down {
					return checker.Report{}, errors.New("payment's ledger: connection refused")
				}
				return rep, nil
			}
			c.Crash = func(_ context.Context, service, when string) error {
				if service == "paymnet" {
					return fmt.Errorf("%w: no service %q", admin.ErrCrash, service)
				}
				if service == "menu-2" {
					return fmt.Errorf("%w: menu-2 does not answer: it may be restarting already", admin.ErrCrashUnavailable)
				}
				crashed = append(crashed, service+" "+when)
				return nil
			}
		})
		r := rg.send(t, "GET", "/admin/check", "")
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, false, r.body["ok"])
		assert.Contains(t, r.body["summary"], "1 double charges")
		down = true
		r = rg.send(t, "GET", "/admin/check", "")
		assert.Equal(t, 503, r.status, r.raw)
		assert.Contains(t, r.message(), "judged nothing: payment's ledger: connection refused")

		for _, c := range []struct{ body, code, says string }{
			{`{}`, "invalid_crash", `"service" is missing`},
			{`{"service": "payment", "when": "later"}`, "invalid_crash", `"when" is "later"`},
			{`{"service": "order", "when": "next-charge"}`, "invalid_crash", "is for payment"},
			{`{"service": "payment"}`, "invalid_crash", `"when" is missing`},
			{`{"service": "payment", "when": null}`, "invalid_crash", `"when" is missing`},
			{`{"service": "paymnet", "when": "now"}`, "invalid_crash", `no service "paymnet"`},
			{`{"service": 7}`, "bad_json", ""},
		} {
			r = rg.send(t, "POST", "/admin/crash", c.body)
			assert.Equal(t, 400, r.status, c.body)
			assert.Equal(t, c.code, r.code(), c.body)
			assert.Contains(t, r.message(), c.says, c.body)
		}
		assert.Empty(t, crashed, "no bad request crashed anything")
		r = rg.send(t, "POST", "/admin/crash", `{"service": "menu-2", "when": "now"}`)
		assert.Equal(t, 409, r.status, "a process that is restarting is a conflict, not a bad request: %s", r.raw)
		assert.Equal(t, "not_running", r.code())
		r = rg.send(t, "POST", "/admin/crash", `{"service": "payment", "when": "next-charge"}`)
		assert.Equal(t, 202, r.status, r.raw)
		r = rg.send(t, "POST", "/admin/crash", `{"service": "courier", "when": "now"}`)
		assert.Equal(t, 202, r.status, r.raw)
		assert.Equal(t, []string{"payment next-charge", "courier now"}, crashed)
		var logged []string
		for _, c := range rg.log.Changes(0) {
			if c.Kind == scenario.KindCrash {
				logged = append(logged, c.Description)
			}
		}
		assert.Equal(t, []string{"crash: payment's process will be killed after its next charge is stored, before the answer",
			"crash: courier's process killed"}, logged, "the change log (and so the dashboard) shows each crash")
	})
}

// The traces routes: off without a ring, and with one a clear 400 for a
// filter they do not know, a 404 for a trace not held, and the list and
// one trace for what is held.
func TestTracesRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t)
		r := rg.send(t, "GET", "/admin/traces", "")
		assert.Equal(t, 501, r.status, r.raw)
		assert.Contains(t, r.message(), "-traces 0")
	})
	synctest.Test(t, func(t *testing.T) {
		tr := tracing.New(nil)
		sys, err := system.Start(system.Config{Tracer: tr})
		require.NoError(t, err)
		defer sys.Close()
		resp, _, err := sys.GraphQL(context.Background(), "", `{ restaurants { id } }`, nil)
		require.NoError(t, err)
		require.Empty(t, resp.Errors)
		rg := newRig(t, func(c *admin.Config) { c.Traces = tr.Ring() })
		for _, tc := range []struct{ path, code, says string }{
			{"/admin/traces?flow=chekout", "bad_query", "checkout, browse"},
			{"/admin/traces?outcome=slowish", "bad_query", "failed, slow, retried"},
			{"/admin/traces?limit=many", "bad_query", "1 to 500"},
			{"/admin/traces?limit=0", "bad_query", "1 to 500"},
			{"/admin/traces?outcomes=failed", "bad_query", "unknown parameter"},
			{"/admin/traces?flow=checkout&flow=browse", "bad_query", "2 times"},
			{"/admin/traces?limit=5&limit=abc", "bad_query", "2 times"},
			{"/admin/traces?flow=", "bad_query", "flow is empty"},
			{"/admin/traces?flow=%ZZ", "bad_query", "malformed"},
			{"/admin/traces/0123", "bad_trace_id", "32 hex digits"},
			{"/admin/traces/%3Cscript%3E", "bad_trace_id", "32 hex digits"},
			{"/admin/traces/00000000000000000000000000000000", "bad_trace_id", "not all zero"},
			{"/admin/changes?after=1&after=2", "bad_query", "2 times"},
			{"/admin/changes?since=1", "bad_query", "unknown parameter"},
		} {
			r := rg.send(t, "GET", tc.path, "")
			assert.Equal(t, 400, r.status, tc.path)
			assert.Equal(t, tc.code, r.code(), tc.path)
			assert.Contains(t, r.message(), tc.says, tc.path)
		}
		r := rg.send(t, "GET", "/admin/traces/0123456789abcdef0123456789abcdef", "")
		assert.Equal(t, 404, r.status, r.raw)
		assert.Equal(t, "no_such_trace", r.code())
		r = rg.send(t, "POST", "/admin/traces", "{}")
		assert.Equal(t, 405, r.status, r.raw)

		r = rg.send(t, "GET", "/admin/traces?flow=browse", "")
		require.Equal(t, 200, r.status, r.raw)
		list, _ := r.body["traces"].([]any)
		require.Len(t, list, 1, "one restaurant list, one trace: %s", r.raw)
		id, _ := list[0].(map[string]any)["traceId"].(string)
		r = rg.send(t, "GET", "/admin/traces/"+id, "")
		require.Equal(t, 200, r.status, r.raw)
		assert.Contains(t, r.raw, `"gateway POST /graphql"`)
		assert.Contains(t, r.raw, `"menu-`)
		r = rg.send(t, "GET", "/admin/traces/"+strings.ToUpper(id), "")
		assert.Equal(t, 200, r.status, "an id in upper case is the same id: %s", r.raw)
	})
}
