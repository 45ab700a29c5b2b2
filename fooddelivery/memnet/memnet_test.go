package memnet_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/memnet"
)

func serveHello(t *testing.T, n *memnet.Network, name string) *http.Server {
	t.Helper()
	l, err := n.Listen(name)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+name)
	})}
	go srv.Serve(l)
	return srv
}

func TestHTTPOverMemnet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		defer n.Close()
		srv := serveHello(t, n, "payment")
		defer srv.Close()
		hc := &http.Client{Transport: (&memnet.Dialer{Network: n}).Transport()}
		defer hc.CloseIdleConnections()

		for i := 0; i < 3; i++ {
			resp, err := hc.Get("http://payment/charges")
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, "hello from payment", string(body))
		}
	})
}

func TestDialErrorsMirrorNet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		defer n.Close()
		l, err := n.Listen("payment")
		require.NoError(t, err)
		defer l.Close()
		d := &memnet.Dialer{Network: n, Timeout: 300 * time.Millisecond}

		_, err = d.DialContext(context.Background(), "tcp", "nobody:80")
		var dnsErr *net.DNSError
		assert.ErrorAs(t, err, &dnsErr, "an unknown name fails like a failed DNS lookup")

		n.SetConnectFault("payment", memnet.Refused)
		start := time.Now()
		_, err = d.DialContext(context.Background(), "tcp", "payment:80")
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		assert.Zero(t, time.Since(start), "a refused connect fails at once")

		n.SetConnectFault("payment", memnet.BlackHoled)
		start = time.Now()
		_, err = d.DialContext(context.Background(), "tcp", "payment:80")
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout(), "a dial timeout reports Timeout() like net.Dialer's")
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "a black-holed connect ends at the dialer's Timeout")

		n.SetConnectFault("payment", memnet.Normal)
		c, err := d.DialContext(context.Background(), "tcp", "payment:80")
		require.NoError(t, err, "healing the fault lets dials through again")
		c.Close()
	})
}

func TestCloseFailsPendingDialsAndAccepts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		l, err := n.Listen("menu-1")
		require.NoError(t, err)
		n.SetConnectFault("payment", memnet.BlackHoled)

		dialErr := make(chan error, 1)
		go func() {
			_, err := (&memnet.Dialer{Network: n}).DialContext(context.Background(), "tcp", "payment:80")
			dialErr <- err
		}()
		acceptErr := make(chan error, 1)
		go func() {
			_, err := l.Accept()
			acceptErr <- err
		}()
		synctest.Wait()
		require.NoError(t, n.Close())
		assert.ErrorIs(t, <-dialErr, net.ErrClosed)
		assert.ErrorIs(t, <-acceptErr, net.ErrClosed)
		require.NoError(t, n.Close(), "Close is idempotent")
		_, err = n.Listen("menu-2")
		assert.ErrorIs(t, err, net.ErrClosed)
	})
}

func TestCloseClosesOpenConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		l, err := n.Listen("courier")
		require.NoError(t, err)
		c, err := (&memnet.Dialer{Network: n}).Dial("tcp", "courier:80")
		require.NoError(t, err)
		s, err := l.Accept()
		require.NoError(t, err)
		assert.Equal(t, "courier", c.RemoteAddr().String())

		readErr := make(chan error, 1)
		go func() {
			_, err := s.Read(make([]byte, 1))
			readErr <- err
		}()
		synctest.Wait()
		n.Close()
		assert.Error(t, <-readErr, "a read blocked on an open connection ends when the network closes")
	})
}

func TestListenRejectsDuplicatesAndEmptyNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		defer n.Close()
		_, err := n.Listen("order")
		require.NoError(t, err)
		_, err = n.Listen("order:80")
		assert.Error(t, err, "the port is ignored, so order:80 is the same name")
		_, err = n.Listen("")
		assert.Error(t, err)
	})
}

func TestDialerWithoutNetwork(t *testing.T) {
	_, err := (&memnet.Dialer{}).Dial("tcp", "payment:80")
	assert.Error(t, err)
	_, err = (&memnet.Dialer{Network: memnet.New(), Timeout: -time.Second}).Dial("tcp", "payment:80")
	assert.Error(t, err)
	assert.False(t, errors.Is(err, net.ErrClosed))
}

// The loopback network serves the runnable system; it binds 127.0.0.1 only.
func TestLoopback(t *testing.T) {
	n := memnet.NewLoopback()
	defer n.Close()
	srv := serveHello(t, n, "menu-1")
	defer srv.Close()
	_, err := n.ListenAddr("evil", "0.0.0.0:0")
	assert.Error(t, err, "only loopback addresses may be bound")
	assert.Contains(t, n.TCPAddr("menu-1"), "127.0.0.1:")

	hc := &http.Client{Timeout: 10 * time.Second, Transport: (&memnet.Dialer{Network: n, Timeout: 5 * time.Second}).Transport()}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://menu-1/restaurants")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello from menu-1", string(body))
}

// A service in another process is dialled by name once SetRemote says
// where it listens; the address must be loopback unless the caller allows
// the host, and connect faults still apply to the name.
func TestRemote(t *testing.T) {
	other := memnet.NewLoopback() // the other process
	defer other.Close()
	srv := serveHello(t, other, "payment")
	defer srv.Close()

	n := memnet.NewLoopback()
	defer n.Close()
	require.NoError(t, n.SetRemote("payment", other.TCPAddr("payment"), nil))
	assert.Equal(t, other.TCPAddr("payment"), n.TCPAddr("payment"), "TCPAddr gives a remote's address too")
	hc := &http.Client{Timeout: 10 * time.Second, Transport: (&memnet.Dialer{Network: n, Timeout: 5 * time.Second}).Transport()}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://payment/charges")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello from payment", string(body))

	n.SetConnectFault("payment", memnet.Refused)
	_, err = (&memnet.Dialer{Network: n}).Dial("tcp", "payment:80")
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "a connect fault applies to a remote name")
	n.SetConnectFault("payment", memnet.Normal)

	for _, addr := range []string{"10.0.0.5:80", "payment", "127.0.0.1:0", "127.0.0.1:http", "db.example:80"} {
		assert.Error(t, n.SetRemote("x", addr, nil), "address %q is refused", addr)
	}
	assert.NoError(t, n.SetRemote("order", "order:8080", func(host string) bool { return host == "order" }),
		"a host the caller allows (a container's name) is accepted")
	assert.Error(t, n.SetRemote("order", "10.0.0.5:8080", func(string) bool { return true }), "an IP that is not loopback never is")
	assert.Error(t, memnet.New().SetRemote("payment", "127.0.0.1:80", nil), "an in-memory network has no remotes")
	l, err := n.Listen("menu-1")
	require.NoError(t, err)
	defer l.Close()
	assert.Error(t, n.SetRemote("menu-1", "127.0.0.1:80", nil), "a name this network listens on cannot be remote")
}

// Inside a container the services listen on every interface of the
// container; anywhere else only on loopback.
func TestContainerListensOnEveryInterface(t *testing.T) {
	n := memnet.NewContainer()
	defer n.Close()
	l, err := n.ListenAddr("payment", "0.0.0.0:0")
	require.NoError(t, err, "a container's service binds 0.0.0.0")
	l.Close()
	_, err = n.ListenAddr("order", "10.0.0.5:0")
	assert.Error(t, err, "but no other address")
	lo := memnet.NewLoopback()
	defer lo.Close()
	_, err = lo.ListenAddr("payment", "0.0.0.0:0")
	assert.Error(t, err, "outside a container 0.0.0.0 is refused")
}
