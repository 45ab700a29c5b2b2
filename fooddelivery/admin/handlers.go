package admin

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// fail answers err with the status and code its kind calls for, and
// err's text when it is about the request; an error of no known kind is
// answered 500 with a fixed message.
func fail(w http.ResponseWriter, err error) {
	status, code := http.StatusInternalServerError, "internal"
	switch {
	case errors.Is(err, scenario.ErrUnknownScenario):
		status, code = http.StatusNotFound, "unknown_scenario"
	case errors.Is(err, scenario.ErrBusy):
		status, code = http.StatusConflict, "busy"
	case errors.Is(err, scenario.ErrInvalid):
		status, code = http.StatusConflict, "cannot_run"
	case errors.Is(err, scenario.ErrNotWired):
		status, code = http.StatusNotImplemented, "not_wired"
	case errors.Is(err, scenario.ErrNoRule):
		status, code = http.StatusNotFound, "no_such_rule"
	case errors.Is(err, scenario.ErrUnknownFeature):
		status, code = http.StatusBadRequest, "unknown_feature"
	case errors.Is(err, faults.ErrUnknownTarget):
		status, code = http.StatusBadRequest, "unknown_target"
	case errors.Is(err, faults.ErrInvalid), errors.Is(err, faults.ErrNoNetwork):
		status, code = http.StatusBadRequest, "invalid_fault"
	case errors.Is(err, loadgen.ErrInvalid):
		status, code = http.StatusBadRequest, "invalid_load"
	}
	msg := err.Error() // the packages' own words about the instructor's input
	if status == http.StatusInternalServerError {
		msg = "the admin API could not do this; the system's state is as it was" // what failed is not the caller's to read
	}
	writeError(w, status, code, msg)
}

// ruleView is a fault rule as the API shows it.
type ruleView struct {
	// Spec is the rule in the -fault flag syntax.
	Spec    string `json:"spec"`
	Service string `json:"service"`
	// Route is "" for a rule on every route.
	Route string `json:"route"`
	// Applied counts the requests the fault was applied to since it was
	// set.
	Applied int64 `json:"applied"`
}

func (a *api) view(r faults.Rule) ruleView {
	return ruleView{Spec: r.String(), Service: r.Service, Route: r.Route, Applied: a.ctl.Faults.Applied(r.Service, r.Route)}
}

func (a *api) listFaults(w http.ResponseWriter, r *http.Request) {
	rules := []ruleView{}
	for _, rl := range a.ctl.Faults.List() {
		rules = append(rules, a.view(rl))
	}
	writeJSON(w, http.StatusOK, map[string]any{"rules": rules, "routes": a.ctl.Faults.Routes()})
}

func (a *api) addFault(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Spec string `json:"spec"`
	}
	if !a.decode(w, r, &in, false) {
		return
	}
	if strings.TrimSpace(in.Spec) == "" {
		writeError(w, http.StatusBadRequest, "invalid_fault", `"spec" is missing: send {"spec": "payment:POST /charges=hang,max=5s"} (the -fault flag syntax)`)
		return
	}
	rule, err := a.ctl.AddFault(By, in.Spec)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"rule": a.view(rule)})
}

// removeFault removes the rule named by the query or the body.
func (a *api) removeFault(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Spec    string `json:"spec"`
		Service string `json:"service"`
		Route   string `json:"route"`
		All     bool   `json:"all"`
	}
	if !a.decode(w, r, &in, true) {
		return
	}
	q := r.URL.Query()
	if q.Has("spec") || q.Has("service") || q.Has("all") {
		in.Spec, in.Service, in.Route = q.Get("spec"), q.Get("service"), q.Get("route")
		all, err := strconv.ParseBool(q.Get("all"))
		if q.Has("all") && err != nil {
			writeError(w, http.StatusBadRequest, "bad_query", "all must be true or false")
			return
		}
		in.All = all
	}
	ways := 0
	for _, set := range []bool{in.Spec != "", in.Service != "", in.All} {
		if set {
			ways++
		}
	}
	if ways != 1 || (in.Route != "" && in.Service == "") {
		writeError(w, http.StatusBadRequest, "bad_query",
			"name the rule to remove in one way: ?spec=payment:POST /charges (a -fault spec; what follows '=' is ignored), "+
				"?service=payment&route=POST /charges (no route: the rule for every route), or ?all=true")
		return
	}
	removed := []ruleView{}
	if in.All {
		for _, rl := range a.ctl.Faults.List() {
			if v, err := a.remove(rl.Service, rl.Route); err == nil {
				removed = append(removed, v)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"removed": removed})
		return
	}
	service, route := in.Service, in.Route
	if in.Spec != "" {
		lhs, _, _ := strings.Cut(in.Spec, "=")
		service, route, _ = strings.Cut(lhs, ":")
		service = strings.TrimSpace(service)
	}
	v, err := a.remove(service, route)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"removed": append(removed, v)})
}

// remove removes the rule for service and route and returns its view,
// with the count of requests it was applied to up to its removal.
func (a *api) remove(service, route string) (ruleView, error) {
	applied := a.ctl.Faults.Applied(service, route)
	got, err := a.ctl.RemoveFault(By, service, route)
	if err != nil {
		return ruleView{}, err
	}
	v := a.view(got)
	v.Applied = max(applied, a.ctl.Faults.Applied(service, route))
	return v, nil
}

func (a *api) getLoad(w http.ResponseWriter, r *http.Request) {
	if a.ctl.Load == nil {
		fail(w, fmt.Errorf("%w: this system runs no load generator", scenario.ErrNotWired))
		return
	}
	writeJSON(w, http.StatusOK, a.ctl.Load.Stats())
}

func (a *api) putLoad(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Rate *int        `json:"rate"`
		Mix  loadgen.Mix `json:"mix"`
	}
	if !a.decode(w, r, &in, false) {
		return
	}
	if a.ctl.Load == nil {
		fail(w, fmt.Errorf("%w: this system runs no load generator", scenario.ErrNotWired))
		return
	}
	if in.Rate == nil && in.Mix == nil {
		writeError(w, http.StatusBadRequest, "invalid_load", `send {"rate": 20} (requests per second, 0 pauses, at most `+
			strconv.Itoa(loadgen.MaxRate)+`) and/or {"mix": {"checkout": 3, "menu": 1}} (actions: `+strings.Join(loadgen.Actions(), ", ")+`)`)
		return
	}
	// Check both before changing either, so a bad mix does not leave a new
	// rate behind.
	if in.Rate != nil && (*in.Rate < 0 || *in.Rate > loadgen.MaxRate) {
		fail(w, fmt.Errorf("%w: rate %d requests per second is outside 0..%d (0 pauses the load)", loadgen.ErrInvalid, *in.Rate, loadgen.MaxRate))
		return
	}
	if in.Mix != nil {
		if err := in.Mix.Validate(); err != nil {
			fail(w, err)
			return
		}
	}
	if in.Rate != nil {
		if err := a.ctl.SetRate(By, *in.Rate); err != nil {
			fail(w, err)
			return
		}
	}
	if in.Mix != nil {
		if err := a.ctl.SetMix(By, in.Mix); err != nil {
			fail(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, a.ctl.Load.Stats())
}

func (a *api) runner(w http.ResponseWriter) bool {
	if a.run == nil {
		fail(w, fmt.Errorf("%w: this system runs no scenario runner", scenario.ErrNotWired))
		return false
	}
	return true
}

func (a *api) listScenarios(w http.ResponseWriter, r *http.Request) {
	if !a.runner(w) {
		return
	}
	type stepView struct {
		AtSeconds float64 `json:"atSeconds"`
		Does      string  `json:"does"`
	}
	type scenarioView struct {
		Name            string     `json:"name"`
		Description     string     `json:"description"`
		DurationSeconds float64    `json:"durationSeconds"`
		Steps           []stepView `json:"steps"`
	}
	scale := a.run.Scale()
	out := []scenarioView{}
	for _, s := range a.run.Scenarios() {
		v := scenarioView{Name: s.Name, Description: s.Description, DurationSeconds: s.Duration().Seconds() * scale, Steps: []stepView{}}
		for _, st := range s.Steps {
			v.Steps = append(v.Steps, stepView{AtSeconds: st.At.Seconds() * scale, Does: st.String()})
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"scenarios": out, "status": a.run.Status()})
}

func (a *api) startScenario(w http.ResponseWriter, r *http.Request) {
	if !a.decode(w, r, &struct{}{}, true) || !a.runner(w) {
		return
	}
	if err := a.run.Start(chi.URLParam(r, "name")); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"status": a.run.Status()})
}

func (a *api) stopScenario(w http.ResponseWriter, r *http.Request) {
	if !a.decode(w, r, &struct{}{}, true) || !a.runner(w) {
		return
	}
	stopped := a.run.Stop()
	writeJSON(w, http.StatusOK, map[string]any{"stopped": stopped, "status": a.run.Status()})
}

func (a *api) scenarioStatus(w http.ResponseWriter, r *http.Request) {
	if !a.runner(w) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": a.run.Status()})
}

func (a *api) getGameDay(w http.ResponseWriter, r *http.Request) {
	state, err := a.ctl.GameDayState()
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"features": state})
}

func (a *api) putGameDay(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Features map[string]bool `json:"features"`
	}
	if !a.decode(w, r, &in, false) {
		return
	}
	if in.Features == nil {
		writeError(w, http.StatusBadRequest, "unknown_feature", `send {"features": {"menu": true}}; features not set to true are released`)
		return
	}
	if err := a.ctl.SetGameDay(By, in.Features); err != nil {
		fail(w, err)
		return
	}
	a.getGameDay(w, r)
}

func (a *api) changes(w http.ResponseWriter, r *http.Request) {
	q, ok := strictQuery(w, r, "after")
	if !ok {
		return
	}
	var after int64
	if s, set := q["after"]; set {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "bad_query", "after must be a change number (0 or more)")
			return
		}
		after = n
	}
	writeJSON(w, http.StatusOK, map[string]any{"changes": a.ctl.Log.Changes(after)})
}

func (a *api) check(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Check == nil {
		writeError(w, http.StatusNotImplemented, "not_wired", "this system has no checker wired in")
		return
	}
	rep, err := a.cfg.Check(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "check_unavailable",
			"the checker could not read the system, so it judged nothing: "+err.Error()+"; try again once every service answers")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": rep.OK(), "summary": rep.String(), "report": rep})
}

func (a *api) crash(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Service string `json:"service"`
		When    string `json:"when"`
	}
	if !a.decode(w, r, &in, false) {
		return
	}
	if a.cfg.Crash == nil {
		writeError(w, http.StatusConflict, "needs_processes",
			"a crash kills one service's process, and here every service shares this one: start the system with -processes")
		return
	}
	switch {
	case strings.TrimSpace(in.Service) == "":
		writeError(w, http.StatusBadRequest, "invalid_crash", `"service" is missing: send {"service": "payment", "when": "now"}`)
		return
	case in.When == "":
		writeError(w, http.StatusBadRequest, "invalid_crash",
			fmt.Sprintf(`"when" is missing: say %q (at once) or %q (payment, after its next charge is stored and before the answer); a crash is never guessed`, CrashNow, CrashNextCharge))
		return
	case in.When != CrashNow && in.When != CrashNextCharge:
		writeError(w, http.StatusBadRequest, "invalid_crash",
			fmt.Sprintf(`"when" is %s; it is %q (at once) or %q (payment, after its next charge is stored and before the answer)`,
				fooddelivery.Quote(in.When), CrashNow, CrashNextCharge))
		return
	case in.When == CrashNextCharge && in.Service != "payment":
		writeError(w, http.StatusBadRequest, "invalid_crash",
			fmt.Sprintf(`"when": %q is for payment, which charges; %s is crashed with "when": %q`, CrashNextCharge, fooddelivery.Quote(in.Service), CrashNow))
		return
	}
	if err := a.cfg.Crash(r.Context(), in.Service, in.When); err != nil {
		switch {
		case errors.Is(err, ErrCrashUnavailable):
			writeError(w, http.StatusConflict, "not_running", err.Error())
			return
		case errors.Is(err, ErrCrash):
			writeError(w, http.StatusBadRequest, "invalid_crash", err.Error())
			return
		}
		fail(w, err)
		return
	}
	what := in.Service + "'s process killed"
	if in.When == CrashNextCharge {
		what = "payment's process will be killed after its next charge is stored, before the answer"
	}
	a.ctl.Log.Add(scenario.KindCrash, By, "crash: "+what)
	writeJSON(w, http.StatusAccepted, map[string]any{"crash": in})
}

func (a *api) traces(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Traces == nil {
		writeError(w, http.StatusNotImplemented, "not_wired", "tracing is off in this system (-traces 0); start it without -traces 0 to keep traces")
		return
	}
	q, ok := strictQuery(w, r, "flow", "outcome", "limit")
	if !ok {
		return
	}
	limit := 50
	if s, set := q["limit"]; set {
		n, err := strconv.Atoi(s)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_query", fmt.Sprintf("limit %s: give a number of traces, 1 to %d", fooddelivery.Quote(s), tracing.MaxList))
			return
		}
		limit = n
	}
	all := a.cfg.Traces.Traces()
	list, err := tracing.List(all, q["flow"], q["outcome"], limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_query", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"traces": list, "held": len(all)})
}

func (a *api) trace(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Traces == nil {
		writeError(w, http.StatusNotImplemented, "not_wired", "tracing is off in this system (-traces 0); start it without -traces 0 to keep traces")
		return
	}
	id := strings.ToLower(chi.URLParam(r, "id"))
	if !tracing.ValidID(id) {
		writeError(w, http.StatusBadRequest, "bad_trace_id",
			fmt.Sprintf("%s is no trace id: ids are 32 hex digits, not all zero, as GET /admin/traces lists them", fooddelivery.Quote(chi.URLParam(r, "id"))))
		return
	}
	t, ok := a.cfg.Traces.Trace(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no_such_trace",
			fmt.Sprintf("no trace %s is held: ids are 32 hex digits, and only the latest traces are kept; GET /admin/traces lists them", fooddelivery.Quote(id)))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"trace": t})
}

// strictQuery reads r's query for a handler that takes the parameters
// names, each at most once and with a value, and answers 400 bad_query
// (returning false) for anything else: a malformed escape, an unknown
// name (a typo would otherwise silently mean "no filter"), a repeat or an
// empty value.
func strictQuery(w http.ResponseWriter, r *http.Request, names ...string) (map[string]string, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_query", "the query is malformed: "+err.Error())
		return nil, false
	}
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		values := q[name]
		switch {
		case !slices.Contains(names, name):
			writeError(w, http.StatusBadRequest, "bad_query", fmt.Sprintf("unknown parameter %s: this route takes %s", fooddelivery.Quote(name), strings.Join(names, ", ")))
			return nil, false
		case len(values) > 1:
			writeError(w, http.StatusBadRequest, "bad_query", fmt.Sprintf("%s is given %d times: give it once", name, len(values)))
			return nil, false
		case values[0] == "":
			writeError(w, http.StatusBadRequest, "bad_query", fmt.Sprintf("%s is empty: give a value, or leave it out", name))
			return nil, false
		}
		out[name] = values[0]
	}
	return out, true
}
