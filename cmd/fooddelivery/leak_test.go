package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// internalText is what no answer a customer gets may contain: an address
// of the system's inside, a Go error chain, a stack, or an instance's
// name (the menu replicas' host names).
var internalText = []string{"http://", "https://", "goroutine ", "context deadline exceeded", "context canceled",
	"dial ", "connection reset", "EOF", "menu-1", "menu-2", "menu-3", ".go:"}

// leakScan reads every answer the customers get and remembers the first
// few that carry internal text.
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
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	for _, bad := range internalText {
		if bytes.Contains(body, []byte(bad)) {
			s.leaked++
			if len(s.leaks) < 3 {
				s.leaks = append(s.leaks, "\""+bad+"\" in "+r.Method+" "+r.URL.Path+": "+string(body[:min(len(body), 400)]))
			}
			break
		}
	}
	return resp, nil
}

// report fails t when an answer carried internal text.
func (s *leakScan) report(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaked > 0 {
		t.Errorf("%d of the %d answers the customers got carry internal text (an address, a Go error, an instance's name), for example:\n  %s",
			s.leaked, s.seen, strings.Join(s.leaks, "\n  "))
	}
}
