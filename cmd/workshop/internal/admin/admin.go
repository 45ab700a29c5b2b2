package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

const adminUsage = `usage: go run ./cmd/workshop admin [-addr 127.0.0.1:8080] [-json] command

Sends one request to the running system's admin API (go run ./cmd/fooddelivery)
and prints the answer, so no shell has to quote JSON. Commands:
  faults                    list the fault rules and the routes they may target
  fault SPEC                add a fault in the -fault syntax: fault payment=hang,max=5s
                            (a route has a space: fault "payment:POST /charges=error,status=503")
  unfault SPEC              remove the rule for SPEC's service and route: unfault payment
  unfault all               remove every rule
  load                      show the simulated customers' counts
  load N                    set the customers' rate to N requests a second (0 pauses them)
  scenarios                 list the scripted incidents
  scenario NAME             start one: scenario payment-down
  scenario stop             stop the one running (what it changed is put back)
  gameday                   show lab 07's game-day switch
  gameday FEATURE=on|off... force or release lab 07's fallbacks: gameday eta=on menu=off
  changes                   the change log
  check                     the checker: what customers were told against what was stored
  crash SERVICE now|next-charge
                            kill a service's process (-processes only): crash payment next-charge
  traces [FLOW] [OUTCOME]   the latest traces, by flow (checkout, browse) and outcome (failed, slow,
                            retried, hedged, fallback): traces checkout retried
  trace ID                  one trace as a text waterfall: its spans on one time axis, and the
                            patterns' decisions (-json: the admin API's JSON)
`

// adminWords are the admin command's commands.
var adminWords = []string{"faults", "fault", "unfault", "load", "scenarios", "scenario", "gameday", "changes", "check", "crash", "traces", "trace"}

// adminRequest is one request of the admin command.
type adminRequest struct {
	method, path string
	body         any // JSON-encoded when not nil
	// render, when set, prints a 2xx answer for people instead of the
	// indented JSON (admin's -json keeps the JSON).
	render func(w io.Writer, raw []byte) error
}

// parseAdmin turns the admin command's words into a request, or errUsage.
func parseAdmin(args []string) (adminRequest, error) {
	if len(args) == 0 {
		return adminRequest{}, repo.ErrUsage
	}
	cmd, rest := args[0], args[1:]
	one := func() (string, bool) { return strings.Join(rest, " "), len(rest) == 1 }
	switch cmd {
	case "faults", "load", "scenarios", "gameday", "changes", "check", "traces":
		if len(rest) == 0 {
			path := map[string]string{"faults": "/admin/faults", "load": "/admin/load", "scenarios": "/admin/scenarios",
				"gameday": "/admin/gameday", "changes": "/admin/changes", "check": "/admin/check", "traces": "/admin/traces"}[cmd]
			return adminRequest{method: http.MethodGet, path: path}, nil
		}
	}
	switch cmd {
	case "fault":
		if spec, ok := one(); ok {
			return adminRequest{method: http.MethodPost, path: "/admin/faults", body: map[string]string{"spec": spec}}, nil
		}
	case "unfault":
		if spec, ok := one(); ok && spec == "all" {
			return adminRequest{method: http.MethodDelete, path: "/admin/faults?all=true", body: nil}, nil
		} else if ok {
			return adminRequest{method: http.MethodDelete, path: "/admin/faults?spec=" + url.QueryEscape(spec), body: nil}, nil
		}
	case "load":
		if n, ok := one(); ok {
			rate, err := strconv.Atoi(n)
			if err != nil {
				return adminRequest{}, fmt.Errorf("admin load %q: the rate is a whole number of requests a second", n)
			}
			return adminRequest{method: http.MethodPut, path: "/admin/load", body: map[string]int{"rate": rate}}, nil
		}
	case "scenario":
		if name, ok := one(); ok && name == "stop" {
			return adminRequest{method: http.MethodPost, path: "/admin/scenario/stop", body: struct{}{}}, nil
		} else if ok {
			return adminRequest{method: http.MethodPost, path: "/admin/scenarios/" + url.PathEscape(name) + "/start", body: struct{}{}}, nil
		}
	case "crash":
		if len(rest) == 2 {
			return adminRequest{method: http.MethodPost, path: "/admin/crash", body: map[string]string{"service": rest[0], "when": rest[1]}}, nil
		}
		return adminRequest{}, fmt.Errorf("admin crash: say the service and when: crash payment now, or crash payment next-charge")
	case "traces":
		if len(rest) <= 2 {
			q := url.Values{}
			for _, by := range rest {
				key := "outcome"
				if by == "checkout" || by == "browse" { // the system's flows of a trace
					key = "flow"
				}
				if q.Has(key) {
					return adminRequest{}, fmt.Errorf("admin traces %s: give at most one flow (checkout, browse) and one outcome (failed, slow, retried, hedged, fallback)", strings.Join(rest, " "))
				}
				q.Set(key, by)
			}
			return adminRequest{method: http.MethodGet, path: "/admin/traces?" + q.Encode()}, nil
		}
	case "trace":
		if id, ok := one(); ok {
			return adminRequest{method: http.MethodGet, path: "/admin/traces/" + url.PathEscape(id), render: waterfall}, nil
		}
	case "gameday":
		features := map[string]bool{}
		for _, kv := range rest {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || (v != "on" && v != "off") {
				return adminRequest{}, fmt.Errorf("admin gameday %q: write FEATURE=on or FEATURE=off", kv)
			}
			features[k] = v == "on"
		}
		return adminRequest{method: http.MethodPut, path: "/admin/gameday", body: map[string]any{"features": features}}, nil
	}
	if !slices.Contains(adminWords, cmd) {
		return adminRequest{}, fmt.Errorf("admin %s: no such command; the commands are %s (go run ./cmd/workshop admin lists them)",
			strconv.Quote(cmd), strings.Join(adminWords, ", "))
	}
	return adminRequest{}, repo.ErrUsage
}

// Admin sends the request args describe to the admin API at addr and
// prints the answer; an answer of 400 or more is an error.
func Admin(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:8080", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprint(stdout, adminUsage)
		return repo.ErrFailed
	}
	req, err := parseAdmin(fs.Args())
	if err == repo.ErrUsage {
		fmt.Fprint(stdout, adminUsage)
		return repo.ErrFailed
	}
	if err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return fmt.Errorf("admin -addr %q: want host:port, as the system's banner shows", *addr)
	}
	var body io.Reader
	if req.body != nil {
		b, err := json.Marshal(req.body)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, req.method, "http://"+*addr+req.path, body)
	if err != nil {
		return err
	}
	if req.method != http.MethodGet {
		hreq.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return fmt.Errorf("no answer from the system at %s (is go run ./cmd/fooddelivery running there?): %w", *addr, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if req.render != nil && !*asJSON && resp.StatusCode < 300 {
		return req.render(stdout, raw)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, raw, "", "  ") == nil {
		raw = append(pretty.Bytes(), '\n')
	}
	_, _ = stdout.Write(raw)
	if resp.StatusCode >= 400 {
		return fmt.Errorf("the admin API answered HTTP %d", resp.StatusCode)
	}
	return nil
}
