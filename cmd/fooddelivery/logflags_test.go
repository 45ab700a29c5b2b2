package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// -log and -log-level govern every line the services write, the breakers'
// state changes included: in JSON, a breaker that opens says so (at
// warn), and at the default level warn a demo is quiet otherwise (no info
// line: no line per request, nor the breaker's half-open trials).
func TestLogFlagsGovernEveryLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		quiet bool // no info line
	}{
		{"info", []string{"-log-level", "info"}, false},
		{"the default, warn", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr labtest.SyncBuffer
			args := append([]string{"-lab", "05=solution", "-fast", "-latency", "off", "-fault", "payment:POST /charges=error,status=503"}, tc.args...)
			r := startRunLogging(t, &stderr, args...)
			for range 15 { // lab 05 opens at half of the last 20 calls, 10 at least
				r.post(t, system.SampleToken, query(placeOrder, orderInput()))
			}
			if err := r.stop(); err != nil {
				t.Fatalf("run: %v", err)
			}
			opened, info := false, 0
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			for _, line := range lines {
				if line == "" {
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Errorf("a log line that is not JSON (-log json is the default): %q", line)
					continue
				}
				if m["msg"] == "circuit breaker state changed" {
					opened = true
				}
				if m["level"] == "INFO" {
					info++
				}
			}
			if !opened {
				t.Errorf("no line says the breaker changed state after 15 charges answered 503; the %d lines:\n%s", len(lines), stderr.String())
			}
			if tc.quiet && info > 0 {
				t.Errorf("at the default level warn, %d info lines:\n%s", info, stderr.String())
			}
		})
	}
}
