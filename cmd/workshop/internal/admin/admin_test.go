package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

func TestAdminCommandsBecomeRequests(t *testing.T) {
	for _, tc := range []struct {
		args         string
		method, path string
		body         string
	}{
		{"faults", "GET", "/admin/faults", ""},
		{"fault payment=hang,max=5s", "POST", "/admin/faults", `{"spec":"payment=hang,max=5s"}`},
		{"unfault payment", "DELETE", "/admin/faults?spec=payment", ""},
		{"unfault all", "DELETE", "/admin/faults?all=true", ""},
		{"load 20", "PUT", "/admin/load", `{"rate":20}`},
		{"scenario payment-down", "POST", "/admin/scenarios/payment-down/start", `{}`},
		{"scenario stop", "POST", "/admin/scenario/stop", `{}`},
		{"gameday eta=on menu=off", "PUT", "/admin/gameday", `{"features":{"eta":true,"menu":false}}`},
		{"changes", "GET", "/admin/changes", ""},
		{"check", "GET", "/admin/check", ""},
		{"crash payment next-charge", "POST", "/admin/crash", `{"service":"payment","when":"next-charge"}`},
		{"traces", "GET", "/admin/traces", ""},
		{"traces checkout", "GET", "/admin/traces?flow=checkout", ""},
		{"traces retried", "GET", "/admin/traces?outcome=retried", ""},
		{"traces checkout retried", "GET", "/admin/traces?flow=checkout&outcome=retried", ""},
		{"traces failed browse", "GET", "/admin/traces?flow=browse&outcome=failed", ""},
		{"trace 4bf92f3577b34da6a3ce929d0e0e4736", "GET", "/admin/traces/4bf92f3577b34da6a3ce929d0e0e4736", ""},
	} {
		req, err := parseAdmin(strings.Fields(tc.args))
		if err != nil {
			t.Errorf("admin %s: %v", tc.args, err)
			continue
		}
		body := ""
		if req.body != nil {
			b, _ := json.Marshal(req.body)
			body = string(b)
		}
		if req.method != tc.method || req.path != tc.path || body != tc.body {
			t.Errorf("admin %s = %s %s %s; want %s %s %s", tc.args, req.method, req.path, body, tc.method, tc.path, tc.body)
		}
	}
	for _, bad := range []string{"", "fault", "load twenty", "gameday eta=maybe", "scenario", "reboot", "crash payment", "trace", "traces checkout browse", "traces failed slow", "traces checkout failed slow"} {
		if _, err := parseAdmin(strings.Fields(bad)); err == nil {
			t.Errorf("admin %q should be refused", bad)
		}
	}
}

func TestAdminSendsJSONAndReportsRefusals(t *testing.T) {
	var got struct{ method, path, contentType, body string }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.path, got.contentType, got.body = r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), string(b)
		if strings.Contains(got.body, "nowhere") {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"unknown_target","message":"no service nowhere"}}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"rule":{"spec":"payment=hang"}}`))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	var out bytes.Buffer
	if err := Admin(context.Background(), []string{"-addr", addr, "fault", "payment=hang"}, &out); err != nil {
		t.Fatalf("admin fault: %v", err)
	}
	if got.method != "POST" || got.path != "/admin/faults" || got.contentType != "application/json" || got.body != `{"spec":"payment=hang"}` {
		t.Errorf("sent %+v; want a JSON POST to /admin/faults", got)
	}
	if !strings.Contains(out.String(), `"spec": "payment=hang"`) {
		t.Errorf("the answer is printed, indented: %s", out.String())
	}
	out.Reset()
	err := Admin(context.Background(), []string{"-addr", addr, "fault", "nowhere=hang"}, &out)
	if err == nil || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(out.String(), "no service nowhere") {
		t.Errorf("a refusal is an error and its message is shown: err %v, output %s", err, out.String())
	}
	err = Admin(context.Background(), []string{"-addr", "127.0.0.1:1", "faults"}, &out)
	if err == nil || !strings.Contains(err.Error(), "is go run ./cmd/fooddelivery running") {
		t.Errorf("no system: %v", err)
	}
	if err := Admin(context.Background(), []string{"reboot"}, &out); err == nil || !strings.Contains(err.Error(), `admin "reboot": no such command; the commands are faults,`) {
		t.Errorf("an unknown command is named, with the commands there are: %v", err)
	}
	if err := Admin(context.Background(), []string{"scenario"}, &out); !errors.Is(err, repo.ErrFailed) {
		t.Errorf("a known command without its word prints the usage and fails: %v", err)
	}
}

// admin trace ID prints a text waterfall: a line per span under its
// parent, with its start and duration from the trace's start, and a line
// per event with its attributes; -json prints the admin API's JSON.
func TestAdminTracePrintsAWaterfall(t *testing.T) {
	const answer = `{"trace": {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spans": [
		{"spanId": "a1", "name": "customer -> gateway POST", "start": "2026-12-07T12:00:00Z", "durationMs": 98.6},
		{"spanId": "b2", "parentId": "a1", "name": "gateway POST /graphql", "start": "2026-12-07T12:00:00.0002Z", "durationMs": 98.4},
		{"spanId": "c3", "parentId": "b2", "name": "order -> payment POST", "start": "2026-12-07T12:00:00.010Z", "durationMs": 1.5, "error": "EOF",
		 "events": [{"name": "http.resent", "time": "2026-12-07T12:00:00.0113Z", "attributes": {"fooddelivery.attempt": 2}}]}]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(answer)) }))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out bytes.Buffer
	if err := Admin(context.Background(), []string{"-addr", addr, "trace", "4bf92f3577b34da6a3ce929d0e0e4736"}, &out); err != nil {
		t.Fatalf("admin trace: %v", err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	want := []string{
		"trace 4bf92f3577b34da6a3ce929d0e0e4736: 3 spans, 98.6 ms",
		"    +0.0    98.6 ms  customer -> gateway POST",
		"    +0.2    98.4 ms    gateway POST /graphql",
		"   +10.0     1.5 ms      order -> payment POST  ERROR EOF",
		"   +11.3                   · http.resent attempt=2",
	}
	if len(lines) != len(want) {
		t.Fatalf("admin trace printed %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, lines[i], want[i])
		}
	}
	out.Reset()
	if err := Admin(context.Background(), []string{"-addr", addr, "-json", "trace", "4bf92f3577b34da6a3ce929d0e0e4736"}, &out); err != nil || !strings.Contains(out.String(), `"spanId": "a1"`) {
		t.Errorf("admin -json trace prints the JSON: %v\n%s", err, out.String())
	}
}
