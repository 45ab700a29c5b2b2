package sameorigin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The system's own calls reach an internal service, by service name or
// loopback address; what a web page could send does not.
func TestInternalRefusesWhatABrowserSends(t *testing.T) {
	h := Internal(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for _, tc := range []struct {
		name, host string
		header     map[string]string
		status     int
		code       string
	}{
		{"a call by service name", "payment", nil, 201, ""},
		{"a call by container name and port", "menu-2:9106", nil, 201, ""},
		{"a call on loopback", "127.0.0.1:9103", nil, 201, ""},
		{"a call on IPv6 loopback", "[::1]:9103", nil, 201, ""},
		{"curl, which says none", "127.0.0.1:9103", map[string]string{"Sec-Fetch-Site": "none"}, 201, ""},
		{"a rebound domain name", "attacker.example", nil, 403, "host_refused"},
		{"a rebound name with a port", "attacker.example:9103", nil, 403, "host_refused"},
		{"another address", "10.0.0.7:9103", nil, 403, "host_refused"},
		{"a page's POST", "127.0.0.1:9103", map[string]string{"Origin": "http://attacker.example"}, 403, "cross_origin"},
		{"an opaque origin", "127.0.0.1:9103", map[string]string{"Origin": "null"}, 403, "cross_origin"},
		{"a page's GET, marked by the browser", "127.0.0.1:9103", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "cross_site"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{}`))
		r.Host = tc.host
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || (tc.code != "" && !strings.Contains(w.Body.String(), `"`+tc.code+`"`)) {
			t.Errorf("%s (Host %s): %d %s; want %d %s", tc.name, tc.host, w.Code, w.Body.String(), tc.status, tc.code)
		}
	}
}
