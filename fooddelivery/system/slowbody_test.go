package system_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// 100 clients that send a POST's headers and one byte of its body, then
// stall, hold none of the gateway's 30 slots: an ordinary query is
// answered at once, and each stalled client gets 408 and a closed
// connection after fooddelivery.BodyTimeout.
func TestStalledBodiesHoldNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{Limits: map[string]int{"gateway": 30}})
		require.NoError(t, err)
		defer sys.Close()
		dialer := &memnet.Dialer{Network: sys.Network}
		start := time.Now()
		var wg sync.WaitGroup
		answers := make([]string, 100)
		closedAt := make([]time.Duration, 100)
		for i := range 100 {
			c, err := dialer.Dial("tcp", "gateway:80")
			require.NoError(t, err)
			defer c.Close()
			_, err = fmt.Fprintf(c, "POST /graphql HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
			require.NoError(t, err)
			wg.Go(func() {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					answers[i] = "no answer: " + err.Error()
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answers[i] = resp.Status
				_, err = c.Read(make([]byte, 1))
				if err != nil {
					closedAt[i] = time.Since(start)
				}
			})
		}
		synctest.Wait()

		resp, status, err := sys.GraphQL(context.Background(), "", `{ restaurants { id } }`, nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, status, "an ordinary query, while 100 clients stall mid-body: %+v", resp.Errors)
		assert.Empty(t, resp.Errors)
		assert.Less(t, time.Since(start), time.Second, "it is answered at once (fake time)")

		wg.Wait()
		for i := range 100 {
			assert.Equal(t, "408 Request Timeout", answers[i], "stalled client %d", i)
			assert.Equal(t, fooddelivery.BodyTimeout, closedAt[i], "stalled client %d's connection is closed after the body timeout", i)
		}
	})
}

// rawGateway starts a system with cfg and returns a raw connection to its
// gateway; both are closed when the test ends.
func rawGateway(t *testing.T, cfg system.Config) net.Conn {
	t.Helper()
	sys, err := system.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { sys.Close() })
	c, err := (&memnet.Dialer{Network: sys.Network}).Dial("tcp", "gateway:80")
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// A body over the gateway's limit, up to fooddelivery.MaxAwaitedBody, is
// read whole before the 413, so the client that sends it all before
// reading gets the answer, not a reset.
func TestOversizedBodyGets413NotAReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := rawGateway(t, system.Config{})
		body := make([]byte, 2<<20)
		for i := range body {
			body[i] = ' '
		}
		var sendErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, sendErr = fmt.Fprintf(c, "POST /graphql HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		})
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err, "an answer, not a reset")
		defer resp.Body.Close()
		wg.Wait()
		assert.NoError(t, sendErr, "the whole 2 MiB body was taken")
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	})
}

// A kept-alive connection that carries no request for system.IdleTimeout
// is closed; one that is used stays open.
func TestIdleConnectionsAreClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := rawGateway(t, system.Config{})
		r := bufio.NewReader(c)
		start := time.Now()
		for range 2 {
			_, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n")
			require.NoError(t, err)
			resp, err := http.ReadResponse(r, nil)
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			time.Sleep(system.IdleTimeout - time.Second) // used again before the limit: still open
		}
		_, err := r.ReadByte()
		assert.Error(t, err, "the connection is closed once idle for the limit")
		assert.Equal(t, 2*system.IdleTimeout-time.Second, time.Since(start).Round(time.Second),
			"closed %v after its last request (sent at %v)", system.IdleTimeout, system.IdleTimeout-time.Second)
	})
}

// The same on real TCP sockets on loopback, as the binary serves: 100
// connections stalled mid-body, then an ordinary query. The query is
// answered before any stalled connection is let go (so none held it up),
// and each stalled one is answered 408 and closed once
// fooddelivery.BodyTimeout has passed. The clock is real here: the test
// takes about BodyTimeout, and its bounds leave a slow machine a minute.
func TestStalledBodiesOnTCPHoldNoSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("waits fooddelivery.BodyTimeout on the real clock")
	}
	sys, err := system.Start(system.Config{Network: memnet.NewLoopback(), GatewayAddr: "127.0.0.1:0", Limits: map[string]int{"gateway": 30}})
	require.NoError(t, err)
	defer sys.Close()
	addr := sys.Network.TCPAddr("gateway")
	start := time.Now()
	var wg sync.WaitGroup
	answers := make([]string, 100)
	closedAfter := make([]time.Duration, 100)
	for i := range 100 {
		c, err := net.DialTimeout("tcp", addr, time.Minute)
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetDeadline(time.Now().Add(time.Minute+fooddelivery.BodyTimeout)))
		_, err = fmt.Fprintf(c, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", addr)
		require.NoError(t, err)
		wg.Go(func() {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answers[i] = "no answer: " + err.Error()
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answers[i] = resp.Status
			if _, err := c.Read(make([]byte, 1)); err != nil {
				closedAfter[i] = time.Since(start)
			}
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	asked := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/graphql", strings.NewReader(`{"query":"{ restaurants { id } }"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(asked)
	answeredAfter := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "an ordinary query, while 100 connections stall mid-body: %s", body)
	assert.NotContains(t, string(body), `"errors"`)
	t.Logf("the ordinary query took %v while 100 connections stalled mid-body", took.Round(time.Millisecond))

	wg.Wait()
	for i := range 100 {
		assert.Equal(t, "408 Request Timeout", answers[i], "stalled connection %d", i)
		assert.GreaterOrEqual(t, closedAfter[i], fooddelivery.BodyTimeout, "stalled connection %d is closed no sooner than the body timeout", i)
		assert.Less(t, closedAfter[i], fooddelivery.BodyTimeout+time.Minute, "stalled connection %d is closed at the body timeout, not left open", i)
		assert.Less(t, answeredAfter, closedAfter[i], "the ordinary query was answered before stalled connection %d was let go", i)
	}
}
