// Package admin is the running food-delivery system's JSON admin API: it
// lists, adds and removes fault rules, sets the load generator's rate and
// mix, starts and stops scripted scenarios, flips lab 07's game-day
// switch, and shows the change log. cmd/fooddelivery serves it under
// /admin on the gateway's address (system.System.Mount), outside the
// gateway's concurrency limit and faults, so it answers while the
// gateway is overloaded or broken.
//
// Every change goes through a scenario.Controls, so it is applied and
// logged exactly as a scenario's steps are. The routes (JSON in and out):
//
//	GET    /admin/                            this list of routes
//	GET    /admin/faults                      {"rules": [{"spec", "service", "route", "applied"}], "routes": {instance: [route]}}
//	POST   /admin/faults                      {"spec": "payment=hang,max=5s"} -> 201 {"rule": {...}}
//	DELETE /admin/faults?spec=payment:POST /charges   (or ?service=payment&route=POST /charges,
//	                                          or a body {"spec": ...} or {"service": ..., "route": ...},
//	                                          or ?all=true) -> {"removed": [{...}]}
//	GET    /admin/load                        the load generator's loadgen.Stats
//	PUT    /admin/load                        {"rate": 20, "mix": {"checkout": 3, "menu": 1}} (either or both) -> loadgen.Stats
//	GET    /admin/scenarios                   {"scenarios": [{"name", "description", "durationSeconds", "steps": [{"atSeconds", "does"}]}], "status": scenario.Status}
//	POST   /admin/scenarios/{name}/start      -> 202 {"status": scenario.Status}
//	POST   /admin/scenario/stop               -> {"stopped": true|false, "status": scenario.Status}
//	GET    /admin/scenario                    {"status": scenario.Status}
//	GET    /admin/gameday                     {"features": {"menu": false, "eta": true, ...}}
//	PUT    /admin/gameday                     {"features": {"eta": true}}: the features set to true are forced, all others released
//	GET    /admin/changes?after=N             {"changes": [scenario.Change]}: the log, oldest first, after Seq N
//	GET    /admin/check                       {"ok", "summary", "report": checker.Report}: what customers were told against what was stored
//	POST   /admin/crash                       {"service": "payment", "when": "now"|"next-charge"} -> 202 {"crash": {...}} (-processes only;
//	                                          both fields required; 409 when the process is down or restarting)
//	GET    /admin/traces?flow=&outcome=&limit= {"traces": [tracing.Summary], "held": N}: the latest traces, newest first
//	GET    /admin/traces/{id}                 {"trace": tracing.Trace}: one trace's spans and their events
//
// Errors are {"error": {"code": "...", "message": "..."}} with a message
// that says what to do.
//
// The gateway binds loopback only, so the threat is a web page in the
// user's browser sending requests to 127.0.0.1. The guard refuses, with
// 403 and a message saying why: a Host other than 127.0.0.1, localhost or
// [::1] with the gateway's own port (DNS rebinding); an Origin header
// other than http:// with one of those hosts and that port; and a
// Sec-Fetch-Site other than same-origin or none. Every change (any method
// but GET and HEAD) must be sent with Content-Type application/json, or
// gets 415: a page cannot send that cross-origin without a CORS preflight,
// which the API never grants. Bodies are limited to Config.MaxBodyBytes
// (413 beyond).
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/checker"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// DefaultMaxBodyBytes is the largest request body accepted when
// Config.MaxBodyBytes is zero: 64 KiB, far more than any change needs.
const DefaultMaxBodyBytes = 64 << 10

// Config says what the admin API controls and where it is served.
type Config struct {
	// Addr is the gateway's listening address, host:port (for example
	// sys.Network.TCPAddr("gateway"), "127.0.0.1:8080"). Only its port is
	// used: requests must name it in Host (and Origin, if they send one).
	// Required.
	Addr string
	// Controls applies and logs every change. Required, with Faults set.
	Controls *scenario.Controls
	// Runner plays the scenarios; nil means the scenario routes answer
	// 501 not_wired.
	Runner *scenario.Runner
	// MaxBodyBytes bounds request bodies; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Check runs the checker (package checker) against the running system;
	// nil means GET /admin/check answers 501 not_wired. It must bound its
	// own time by ctx.
	Check func(ctx context.Context) (checker.Report, error)
	// Crash kills service's process, now or in the middle of its next
	// charge (when is CrashNow or CrashNextCharge), and returns an error
	// wrapping ErrCrash that says why it cannot; nil means POST
	// /admin/crash answers 409: in one process a crash would end the whole
	// system.
	Crash func(ctx context.Context, service, when string) error
	// Traces holds the latest traces (a tracing.Ring); nil means GET
	// /admin/traces answers 501 not_wired (tracing is off).
	Traces TraceSource
}

// TraceSource is where the admin API reads traces: a *tracing.Ring, or
// what merges several processes' rings.
type TraceSource interface {
	// Traces returns every trace held, oldest first.
	Traces() []tracing.Trace
	// Trace returns the trace with the hex id, and false when none is held.
	Trace(id string) (tracing.Trace, bool)
}

// The "when" values of POST /admin/crash.
const (
	CrashNow        = "now"         // kill the process at once
	CrashNextCharge = "next-charge" // kill payment after its next charge is stored, before the answer
)

// ErrCrash wraps the reasons Config.Crash gives for not crashing a
// process that the request is wrong about (an unknown service): 400.
var ErrCrash = errors.New("admin: cannot crash")

// ErrCrashUnavailable wraps the reasons Config.Crash gives for not
// crashing a process now, though the request is right (it does not
// answer: down, or restarting already): 409.
var ErrCrashUnavailable = errors.New("admin: cannot crash now")

// By is what the admin API writes in Change.By.
const By = "admin"

// New returns the admin API's handler, for requests whose path starts
// with /admin. It returns an error when Addr has no port in 1..65535, when
// Controls or Controls.Faults is nil, or for a negative MaxBodyBytes.
func New(cfg Config) (http.Handler, error) {
	p, err := gatewayPort(cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.Controls == nil || cfg.Controls.Faults == nil {
		return nil, errors.New("admin: Config.Controls with a fault injector is required")
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("admin: negative MaxBodyBytes %d", cfg.MaxBodyBytes)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	a := &api{cfg: cfg, ctl: cfg.Controls, run: cfg.Runner, guard: newGuard(p)}

	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found",
			fmt.Sprintf("no admin route %s; GET /admin/ lists them", fooddelivery.Quote(r.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		allow := a.allowed(r.URL.Path)
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("%s is not allowed on %s; use %s", fooddelivery.Quote(r.Method), r.URL.Path, allow))
	})
	for _, rt := range a.routes() {
		r.Method(rt.Method, rt.Path, rt.handler)
	}
	r.Get("/admin", a.index)
	return a.guard.wrap(recoverJSON(r)), nil
}

type api struct {
	cfg   Config
	ctl   *scenario.Controls
	run   *scenario.Runner
	guard *guard
}

// route is one admin route, for the router and the index.
type route struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	About   string `json:"about"`
	handler http.HandlerFunc
}

func (a *api) routes() []route {
	return []route{
		{"GET", "/admin/", "this list of routes", a.index},
		{"GET", "/admin/faults", "the fault rules, and the routes each instance serves", a.listFaults},
		{"POST", "/admin/faults", `add a rule: {"spec": "payment:POST /charges=hang,max=5s"} (the -fault flag syntax)`, a.addFault},
		{"DELETE", "/admin/faults", "remove a rule: ?spec=payment:POST /charges, or ?service=payment&route=POST /charges, or ?all=true", a.removeFault},
		{"GET", "/admin/load", "the load generator's rate, mix and counters", a.getLoad},
		{"PUT", "/admin/load", `set the load: {"rate": 20} in requests per second (0 pauses), and/or {"mix": {"checkout": 3, "menu": 1}}`, a.putLoad},
		{"GET", "/admin/scenarios", "the scripted scenarios, and what is running", a.listScenarios},
		{"POST", "/admin/scenarios/{name}/start", "start a scenario (one at a time)", a.startScenario},
		{"POST", "/admin/scenario/stop", "stop the running scenario and put back what it changed", a.stopScenario},
		{"GET", "/admin/scenario", "the running scenario's progress", a.scenarioStatus},
		{"GET", "/admin/gameday", "lab 07's game-day switch: which features are forced onto their fallback", a.getGameDay},
		{"PUT", "/admin/gameday", `set the whole switch: {"features": {"menu": true}}; features not set to true are released`, a.putGameDay},
		{"GET", "/admin/changes", "the change log, oldest first; ?after=N for the changes after number N", a.changes},
		{"GET", "/admin/check", "the checker: checkouts answered as placed against payment's ledger and the orders (double charges, lost paid orders, reused ids)", a.check},
		{"GET", "/admin/traces", "the latest traces, newest first: ?flow=checkout|browse, ?outcome=failed|slow|retried|hedged|fallback, ?limit=1..500 (default 50)", a.traces},
		{"GET", "/admin/traces/{id}", "one trace: its spans on one time axis, with the patterns' decisions as events", a.trace},
		{"POST", "/admin/crash", `kill a service's process as SIGKILL does: {"service": "payment", "when": "now"} or "next-charge" (after the charge is stored, before the answer); -processes only`, a.crash},
	}
}

// allowed lists the methods of the routes at path, for a 405's Allow.
func (a *api) allowed(path string) string {
	var methods []string
	for _, rt := range a.routes() {
		if rt.Path == path || (strings.Contains(rt.Path, "{") && strings.HasPrefix(path, strings.TrimSuffix(rt.Path[:strings.Index(rt.Path, "{")], "/")+"/")) {
			methods = append(methods, rt.Method)
		}
	}
	if len(methods) == 0 {
		return "GET"
	}
	return strings.Join(methods, ", ")
}

func (a *api) index(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"about":  "the food-delivery system's admin API; changes need Content-Type: application/json",
		"routes": a.routes(),
	})
}

// writeJSON writes v with status, never to be cached or sniffed.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "->" stays readable; nosniff keeps browsers from taking it for HTML
	_ = enc.Encode(v)
}

// errorBody is the body of every error answer.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	var b errorBody
	b.Error.Code, b.Error.Message = code, message
	writeJSON(w, status, b)
}

// recoverJSON turns a panic in a handler into a 500 JSON error, so that a
// bug answers instead of dropping the connection. The panic's value is not
// in the answer: it is a Go value, for a stack trace, not for a client.
func recoverJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				writeError(w, http.StatusInternalServerError, "internal", "the admin API failed while answering this request")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// decode reads r's JSON body into v: at most MaxBodyBytes, no unknown
// fields, nothing after the value. An empty body leaves v as it is when
// optional is true. It writes the error answer itself and returns false
// on failure.
func (a *api) decode(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	body := http.MaxBytesReader(w, r.Body, a.cfg.MaxBodyBytes)
	raw, err := io.ReadAll(body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large",
			fmt.Sprintf("the body is over %d bytes; an admin change is a small JSON object", a.cfg.MaxBodyBytes))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "bad_body", "reading the body failed: "+err.Error())
		return false
	case len(strings.TrimSpace(string(raw))) == 0:
		if optional {
			return true
		}
		writeError(w, http.StatusBadRequest, "bad_json", "the body is empty; send a JSON object (GET /admin/ shows the shapes)")
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more data after the JSON object")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", "the body is not the JSON object this route takes: "+err.Error())
		return false
	}
	return true
}
