package links_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/links"
)

// These tests run real TCP on loopback through real Toxiproxy proxies, on
// the real clock: they assert lower bounds of time (a toxic cannot make a
// call faster) and outcomes, never an upper bound a slow machine could
// miss.

const bodySize = 50 << 10

// upstream serves GET /small ("ok") and GET /big (50 KB) on loopback.
func upstream(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write([]byte(strings.Repeat("x", bodySize)))
			return
		}
		w.Write([]byte("ok"))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func start(t *testing.T, ls ...links.Link) *links.Proxies {
	t.Helper()
	p, err := links.Start("127.0.0.1:0", ls)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func apply(t *testing.T, p *links.Proxies, specs ...string) {
	t.Helper()
	var rules []faults.Rule
	for _, s := range specs {
		r, err := faults.Parse(s)
		require.NoError(t, err)
		rules = append(rules, r)
	}
	require.NoError(t, p.Apply(rules))
}

// get fetches path through addr on a fresh connection, within timeout.
func get(addr, path string, timeout time.Duration) (body string, took time.Duration, err error) {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return "", time.Since(start), err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), time.Since(start), err
}

func TestEveryNetworkFaultIsAToxic(t *testing.T) {
	up := upstream(t)
	p := start(t, links.Link{From: "order", To: "payment", Upstream: up})
	addr := p.Addr("order", "payment")
	require.NotEmpty(t, addr)
	assert.Empty(t, p.Addr("gateway", "payment"), "no such link")

	body, _, err := get(addr, "/small", 10*time.Second)
	require.NoError(t, err, "a link without a fault carries the call")
	assert.Equal(t, "ok", body)

	t.Run("latency", func(t *testing.T) {
		apply(t, p, "payment=latency,fixed=300ms")
		body, took, err := get(addr, "/small", 30*time.Second)
		require.NoError(t, err)
		assert.Equal(t, "ok", body)
		assert.GreaterOrEqual(t, took, 300*time.Millisecond, "latency=300ms on the link: the answer took %v", took)
	})
	t.Run("blackhole", func(t *testing.T) {
		apply(t, p, "payment=blackhole")
		_, took, err := get(addr, "/small", 500*time.Millisecond)
		var ne net.Error
		require.ErrorAs(t, err, &ne, "a black-holed link never answers: the client's own timeout ends the call")
		assert.True(t, ne.Timeout(), "the error is a timeout: %v", err)
		assert.GreaterOrEqual(t, took, 500*time.Millisecond)
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err, "the connect itself completes: only the data never flows")
		c.Close()
	})
	t.Run("reset", func(t *testing.T) {
		apply(t, p, "payment=reset")
		_, _, err := get(addr, "/small", 10*time.Second)
		require.Error(t, err, "a reset link drops the call")
		assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF),
			"the call ends in a reset or a closed connection, not a timeout: %v", err)
	})
	t.Run("refuse", func(t *testing.T) {
		apply(t, p, "payment=refuse")
		_, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.Error(t, err)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED, "a refused link refuses the connect")
		apply(t, p)
		body, _, err := get(addr, "/small", 10*time.Second)
		require.NoError(t, err, "once the rule goes, the link carries calls again on the same address")
		assert.Equal(t, "ok", body)
	})
	t.Run("slowclose", func(t *testing.T) {
		apply(t, p, "payment=slowclose,delay=400ms")
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		defer c.Close()
		start := time.Now()
		fmt.Fprintf(c, "GET /small HTTP/1.1\r\nHost: payment\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err, "the answer itself arrives")
		io.ReadAll(resp.Body)
		answered := time.Since(start)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err = c.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF, "then the connection closes")
		assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond, "but only after the delay (answered after %v)", answered)
	})
	t.Run("bandwidth", func(t *testing.T) {
		apply(t, p, "payment=bandwidth,rate=50")
		body, took, err := get(addr, "/big", 60*time.Second)
		require.NoError(t, err)
		assert.Len(t, body, bodySize)
		assert.GreaterOrEqual(t, took, 700*time.Millisecond, "50 KB at 50 KB/s takes about a second: it took %v", took)
	})
	t.Run("limitdata", func(t *testing.T) {
		apply(t, p, "payment=limitdata,bytes=1000")
		body, _, err := get(addr, "/big", 10*time.Second)
		assert.Error(t, err, "the link is cut after 1000 bytes, in the middle of the answer")
		assert.Less(t, len(body), 1000, "got %d bytes of a %d-byte answer", len(body), bodySize)
	})
	t.Run("cleared", func(t *testing.T) {
		apply(t, p)
		body, _, err := get(addr, "/big", 10*time.Second)
		require.NoError(t, err)
		assert.Len(t, body, bodySize)
	})
}

// A rule for a service reaches every link to its instances; an
// instance's own rule wins; rules that act on requests stay out of the
// links.
func TestRulesReachTheLinksTheyName(t *testing.T) {
	up := upstream(t)
	p := start(t,
		links.Link{From: "gateway", To: "menu-1", Upstream: up},
		links.Link{From: "gateway", To: "menu-2", Upstream: up},
		links.Link{From: "order", To: "payment", Upstream: up})
	apply(t, p, "menu=latency,fixed=300ms", "menu-2=refuse", "payment:POST /charges=hang", "payment=error,status=503")

	_, took, err := get(p.Addr("gateway", "menu-1"), "/small", 30*time.Second)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "the menu rule delays menu-1's link")
	_, err = net.DialTimeout("tcp", p.Addr("gateway", "menu-2"), 5*time.Second)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "menu-2's own rule wins over the menu rule")
	body, _, err := get(p.Addr("order", "payment"), "/small", 10*time.Second)
	require.NoError(t, err, "a hang of one route and an error status act on requests, in the service: the link is clean")
	assert.Equal(t, "ok", body)
}

// Toxiproxy's API serves toxiproxy-cli and its client, for its own
// address only; a toxic set through it is left alone by Apply.
func TestToxiproxyAPIIsGuardedAndShared(t *testing.T) {
	up := upstream(t)
	p := start(t, links.Link{From: "order", To: "payment", Upstream: up})
	base := "http://" + p.APIAddr()

	resp, err := http.Get(base + "/proxies")
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(raw), `"order-payment"`, "the API lists the link's proxy")

	req, _ := http.NewRequest(http.MethodPost, base+"/proxies/order-payment/toxics",
		strings.NewReader(`{"name":"mine","type":"latency","stream":"downstream","attributes":{"latency":300}}`))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "a toxic added as toxiproxy-cli adds it")
	apply(t, p)
	_, took, err := get(p.Addr("order", "payment"), "/small", 30*time.Second)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "Apply leaves a toxic it did not set alone")

	for _, h := range []struct{ header, value string }{{"Host", "evil.example:8474"}, {"Origin", "http://evil.example"}} {
		req, _ := http.NewRequest(http.MethodPost, base+"/reset", nil)
		if h.header == "Host" {
			req.Host = h.value
		} else {
			req.Header.Set(h.header, h.value)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a request with %s %s is refused", h.header, h.value)
	}

	_, err = links.Start("0.0.0.0:0", nil)
	assert.ErrorContains(t, err, "only loopback addresses")
}

// In a container the API listens on 0.0.0.0 and wants the Host of the
// port published on loopback; any other address is refused.
func TestStartContainerWantsAllInterfacesAndGuardsByLoopbackHost(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8474", "0.0.0.0:0", "10.0.0.1:8474", "8474"} {
		_, err := links.StartContainer(addr, nil)
		assert.ErrorContains(t, err, "give 0.0.0.0:PORT", addr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	p, err := links.StartContainer("0.0.0.0:"+port, []links.Link{{From: "order", To: "payment", Upstream: "127.0.0.1:1", Listen: "127.0.0.1:0"}})
	require.NoError(t, err)
	defer p.Close()
	get := func(host string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port+"/proxies", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("127.0.0.1:"+port))
	assert.Equal(t, http.StatusForbidden, get("toxiproxy.example.com:"+port), "a foreign Host is refused")
	assert.NotEmpty(t, p.Addr("order", "payment"))
}
