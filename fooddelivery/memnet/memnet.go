// Package memnet is an in-memory network for the food-delivery system: real
// net/http clients and servers talk over net.Pipe connections, so the whole
// HTTP stack runs inside a testing/synctest bubble under fake time. Services
// listen and are dialled by name ("payment", "menu-1"); the port in an
// address is ignored, so the URL http://payment/charges reaches the listener
// named "payment".
//
// The same API also runs on TCP loopback (NewLoopback), so one wiring serves
// the tests and the runnable system. Dialer mirrors net.Dialer: a learner
// sets a connect timeout with the code they would write for the real
// network.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ConnectFault is what happens to a dial to a service.
type ConnectFault int

const (
	// Normal: the dial reaches the listener.
	Normal ConnectFault = iota
	// Refused: the dial fails at once with ECONNREFUSED, as when nothing
	// listens on the port.
	Refused
	// BlackHoled: the dial never completes; it waits until the dialer's
	// Timeout, the context or Network.Close ends it, as when packets to the
	// host are silently dropped.
	BlackHoled
)

func (f ConnectFault) String() string {
	switch f {
	case Refused:
		return "refused"
	case BlackHoled:
		return "black-holed"
	default:
		return "normal"
	}
}

// backlog is how many dialled connections wait for Accept before a dial
// blocks, like a TCP listen backlog.
const backlog = 128

// Network is a set of named listeners. Create one with New (in memory) or
// NewLoopback (TCP on 127.0.0.1). All methods are safe for concurrent use.
type Network struct {
	loopback  bool
	container bool // NewContainer: 0.0.0.0 may be bound too

	mu        sync.Mutex
	listeners map[string]*listener // in memory
	tcp       map[string]net.Listener
	remote    map[string]string // service name -> TCP address of a service in another process
	faults    map[string]ConnectFault
	conns     map[*conn]struct{}
	closed    bool
	done      chan struct{}
}

// New returns an empty in-memory network.
func New() *Network {
	return &Network{
		listeners: map[string]*listener{},
		tcp:       map[string]net.Listener{},
		remote:    map[string]string{},
		faults:    map[string]ConnectFault{},
		conns:     map[*conn]struct{}{},
		done:      make(chan struct{}),
	}
}

// NewLoopback returns a network whose listeners are TCP sockets on
// 127.0.0.1 (never another interface) and whose dialer resolves service
// names to them. Connect faults work as on the in-memory network.
func NewLoopback() *Network {
	n := New()
	n.loopback = true
	return n
}

// NewContainer returns a loopback network for a process inside a
// container on a compose network (cmd/fooddelivery -container): its
// listeners may also bind every interface of the container (0.0.0.0),
// which only the compose network and the ports the compose file
// publishes reach. Everything else is as on NewLoopback.
func NewContainer() *Network {
	n := NewLoopback()
	n.container = true
	return n
}

// Addr is the address of a memnet endpoint: the service name.
type Addr string

// Network returns "memnet".
func (Addr) Network() string  { return "memnet" }
func (a Addr) String() string { return string(a) }

// hostOf strips an optional port from address ("payment:80" -> "payment").
func hostOf(address string) string {
	if h, _, err := net.SplitHostPort(address); err == nil {
		return h
	}
	return address
}

// Listen starts listening as the service name. It fails if the name is
// taken, empty, or the network is closed. On a loopback network it binds
// 127.0.0.1 on a free port.
func (n *Network) Listen(name string) (net.Listener, error) {
	return n.ListenAddr(name, "127.0.0.1:0")
}

// ListenAddr is Listen with the TCP address to bind on a loopback network
// (for example "127.0.0.1:8080"); an in-memory network ignores addr. A
// loopback network refuses any host but a loopback one.
func (n *Network) ListenAddr(name, addr string) (net.Listener, error) {
	name = hostOf(name)
	if name == "" {
		return nil, errors.New("memnet: listen: empty service name")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, fmt.Errorf("memnet: listen %q: %w", name, net.ErrClosed)
	}
	if _, ok := n.listeners[name]; ok {
		return nil, fmt.Errorf("memnet: listen %q: name already in use", name)
	}
	if _, ok := n.tcp[name]; ok {
		return nil, fmt.Errorf("memnet: listen %q: name already in use", name)
	}
	if n.loopback {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("memnet: listen %q on %q: %w", name, addr, err)
		}
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) && !(n.container && ip != nil && ip.IsUnspecified()) {
			return nil, fmt.Errorf("memnet: listen %q on %q: only loopback addresses are allowed", name, addr)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("memnet: listen %q: %w", name, err)
		}
		n.tcp[name] = l
		return &tcpListener{Listener: l, n: n, name: name}, nil
	}
	l := &listener{n: n, name: name, queue: make(chan net.Conn, backlog), closed: make(chan struct{})}
	n.listeners[name] = l
	return l, nil
}

// TCPAddr returns the TCP address a loopback network bound for name, or
// the address SetRemote gave it, or "" (always "" on an in-memory
// network).
func (n *Network) TCPAddr(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.tcp[hostOf(name)]; ok {
		return l.Addr().String()
	}
	return n.remote[hostOf(name)]
}

// SetRemote makes dials to the service name go to addr, a TCP host:port
// where the service listens in another process (cmd/fooddelivery
// -processes runs one service per process). It works on a loopback
// network only, and addr's host must be a loopback address, "localhost",
// or, when allowHost says so, another host name (a container's name on a
// compose network). It fails for a name that this network listens on
// itself, and for a malformed addr. Connect faults apply to the name as
// they do to a local listener.
func (n *Network) SetRemote(name, addr string, allowHost func(host string) bool) error {
	name = hostOf(name)
	if name == "" {
		return errors.New("memnet: remote: empty service name")
	}
	if !n.loopback {
		return fmt.Errorf("memnet: remote %q: an in-memory network has no remote services", name)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("memnet: remote %q at %q: want host:port (%v)", name, addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("memnet: remote %q at %q: the port must be a number from 1 to 65535", name, addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && (ip != nil || allowHost == nil || !allowHost(host)) {
		return fmt.Errorf("memnet: remote %q at %q: only loopback addresses are allowed", name, addr)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.tcp[name]; ok {
		return fmt.Errorf("memnet: remote %q: this network listens as %q itself", name, name)
	}
	n.remote[name] = addr
	return nil
}

// SetConnectFault makes dials to the service name behave as f from now on
// (Normal heals it). Connections already open are not touched.
func (n *Network) SetConnectFault(name string, f ConnectFault) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if f == Normal {
		delete(n.faults, hostOf(name))
		return
	}
	n.faults[hostOf(name)] = f
}

// Close closes every listener and open connection and fails every pending
// dial and Accept with net.ErrClosed. net/http transports keep dialing in
// the background after a request is cancelled; Close ends those dials so a
// synctest bubble can finish. Close is idempotent.
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	close(n.done)
	var tcps []net.Listener
	for _, l := range n.tcp {
		tcps = append(tcps, l)
	}
	var conns []*conn
	for c := range n.conns {
		conns = append(conns, c)
	}
	ls := make([]*listener, 0, len(n.listeners))
	for _, l := range n.listeners {
		ls = append(ls, l)
	}
	n.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	for _, l := range tcps {
		l.Close()
	}
	for _, c := range conns {
		c.Close()
	}
	return nil
}

// Dialer dials services on a Network. It mirrors net.Dialer: Timeout bounds
// how long a connect may take. The zero Dialer (with Network set) has no
// timeout, like net.Dialer, and then a black-holed dial waits for the
// context or for Network.Close.
type Dialer struct {
	Network *Network
	// Timeout is the longest a dial may take, covering only the connect,
	// never the request. Zero means no timeout (only the context bounds the
	// dial).
	Timeout time.Duration
}

// Dial dials address (for example "payment:80") without a context.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

// DialContext connects to the service named by address's host; on a
// loopback network, a host that is a loopback IP address is dialled as it
// is. Errors are
// *net.OpError values like those of net.Dialer: a timeout satisfies
// net.Error's Timeout() and wraps os.ErrDeadlineExceeded; a refused connect
// wraps syscall.ECONNREFUSED; an unknown name wraps a *net.DNSError; a
// closed network wraps net.ErrClosed.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	n := d.Network
	if n == nil {
		return nil, opErr(address, errors.New("memnet: Dialer has no Network"))
	}
	if d.Timeout < 0 {
		return nil, opErr(address, fmt.Errorf("memnet: negative dial timeout %v", d.Timeout))
	}
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	name := hostOf(address)
	n.mu.Lock()
	closed, fault := n.closed, n.faults[name]
	l := n.listeners[name]
	tl := n.tcp[name]
	remote := n.remote[name]
	n.mu.Unlock()
	if closed {
		return nil, opErr(address, net.ErrClosed)
	}
	switch fault {
	case Refused:
		return nil, opErr(address, syscall.ECONNREFUSED)
	case BlackHoled:
		select {
		case <-ctx.Done():
			return nil, opErr(address, ctxErr(ctx))
		case <-n.done:
			return nil, opErr(address, net.ErrClosed)
		}
	}
	if n.loopback {
		if ip := net.ParseIP(name); tl == nil && ip != nil && ip.IsLoopback() {
			// A loopback address, not a service name (the gateway's URL
			// on a loopback network): dialled as it is.
			var nd net.Dialer
			return nd.DialContext(ctx, "tcp", address)
		}
		if tl == nil && remote != "" {
			var nd net.Dialer
			return nd.DialContext(ctx, "tcp", remote)
		}
		if tl == nil {
			return nil, opErr(address, &net.DNSError{Err: "no such service", Name: name, IsNotFound: true})
		}
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", tl.Addr().String())
	}
	if l == nil {
		return nil, opErr(address, &net.DNSError{Err: "no such service", Name: name, IsNotFound: true})
	}
	clientEnd, serverEnd := net.Pipe()
	cc := n.track(&conn{Conn: clientEnd, local: Addr("client"), remote: Addr(name)})
	sc := n.track(&conn{Conn: serverEnd, local: Addr(name), remote: Addr("client")})
	if cc == nil || sc == nil {
		clientEnd.Close()
		serverEnd.Close()
		return nil, opErr(address, net.ErrClosed)
	}
	select {
	case l.queue <- sc:
		return cc, nil
	case <-l.closed:
		cc.Close()
		sc.Close()
		return nil, opErr(address, syscall.ECONNREFUSED)
	case <-ctx.Done():
		cc.Close()
		sc.Close()
		return nil, opErr(address, ctxErr(ctx))
	case <-n.done:
		cc.Close()
		sc.Close()
		return nil, opErr(address, net.ErrClosed)
	}
}

func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return os.ErrDeadlineExceeded
	}
	return ctx.Err()
}

func opErr(address string, err error) error {
	return &net.OpError{Op: "dial", Net: "memnet", Addr: Addr(hostOf(address)), Err: err}
}

// track registers c so Close can close it; it returns nil if the network is
// already closed.
func (n *Network) track(c *conn) *conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	c.n = n
	n.conns[c] = struct{}{}
	return c
}

type conn struct {
	net.Conn
	n             *Network
	local, remote Addr
	once          sync.Once
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.n.mu.Lock()
		delete(c.n.conns, c)
		c.n.mu.Unlock()
	})
	return err
}

type listener struct {
	n      *Network
	name   string
	queue  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.queue:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "memnet", Addr: Addr(l.name), Err: net.ErrClosed}
	}
}

// Close stops the listener: pending and future Accepts fail, queued
// connections are closed, and the name becomes free again.
func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.n.mu.Lock()
		if l.n.listeners[l.name] == l {
			delete(l.n.listeners, l.name)
		}
		l.n.mu.Unlock()
		for {
			select {
			case c := <-l.queue:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (l *listener) Addr() net.Addr { return Addr(l.name) }

type tcpListener struct {
	net.Listener
	n    *Network
	name string
}

func (l *tcpListener) Close() error {
	l.n.mu.Lock()
	if l.n.tcp[l.name] == l.Listener {
		delete(l.n.tcp, l.name)
	}
	l.n.mu.Unlock()
	return l.Listener.Close()
}

// Transport returns an http.Transport that dials through d. It sets only
// DialContext: every other field keeps its zero value, which for
// ResponseHeaderTimeout and the client's Timeout means no timeout at all.
func (d *Dialer) Transport() *http.Transport {
	return &http.Transport{DialContext: d.DialContext}
}

// ServiceURL is the base URL of a service on a Network: ServiceURL("payment")
// is "http://payment".
func ServiceURL(name string) string {
	return "http://" + strings.TrimSpace(name)
}
