// Package links puts Toxiproxy (github.com/Shopify/toxiproxy/v2, embedded)
// on every link between the processes of cmd/fooddelivery -processes, and
// turns the fault rules that act on connections (faults.TCP) into its
// toxics: a connect that never completes, a peer that resets, latency on
// the wire, a slow close, a narrow pipe, a connection cut after so many
// bytes. The rules that act on requests (status codes, lost answers,
// hangs of one route) stay inside the services.
//
// Each link is one proxy, named "caller-callee" ("order-payment"): the
// caller dials the proxy, the proxy dials the callee. Toxiproxy's own HTTP
// API serves on a loopback port, so toxiproxy-cli and its Go client work
// against it; the toxics this package sets are named "fault" and it
// leaves any other toxic alone.
package links

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// ToxicName is the name of the toxic Apply sets on a link.
const ToxicName = "fault"

// Link is one caller's connection to one callee.
type Link struct {
	From, To string // instance names: "order", "payment"
	// Upstream is the callee's TCP address (127.0.0.1:PORT, or in a
	// container the callee's container name and port).
	Upstream string
	// Listen is where the link's proxy listens; "" means a free loopback
	// port (127.0.0.1:0).
	Listen string
}

// Name is the link's proxy name: "order-payment".
func (l Link) Name() string { return l.From + "-" + l.To }

// Proxies are the running proxies of a set of links and Toxiproxy's API.
// Create them with Start; all methods are safe for concurrent use.
type Proxies struct {
	server  *toxiproxy.ApiServer
	api     *http.Server
	apiAddr string

	mu      sync.Mutex
	links   map[string]Link
	proxies map[string]*toxiproxy.Proxy
	applied map[string]string // link name -> the spec of the rule applied to it
	stopped map[string]bool   // links disabled by a refuse rule
}

// Start starts one proxy per link, each on a free loopback port, and
// Toxiproxy's HTTP API on apiAddr (a loopback host:port; port 0 picks a
// free one). It returns an error, and leaves nothing running, when a port
// cannot be bound or apiAddr is not loopback.
func Start(apiAddr string, links []Link) (*Proxies, error) {
	host, _, err := net.SplitHostPort(apiAddr)
	if err != nil {
		return nil, fmt.Errorf("links: Toxiproxy's API address %q: %v", apiAddr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("links: Toxiproxy's API address %q: only loopback addresses are allowed", apiAddr)
	}
	return start(apiAddr, "", links)
}

// StartContainer is Start for Toxiproxy in a container of its own
// (cmd/fooddelivery -service toxiproxy in compose.yaml): the API listens
// on apiAddr, 0.0.0.0:PORT, and answers only requests whose Host is
// 127.0.0.1:PORT (the port published on the host's loopback, and the Host
// the other containers send); each link listens on its Listen address.
func StartContainer(apiAddr string, links []Link) (*Proxies, error) {
	host, port, err := net.SplitHostPort(apiAddr)
	if err != nil || host != "0.0.0.0" || port == "0" {
		return nil, fmt.Errorf("links: Toxiproxy's API address %q in a container: give 0.0.0.0:PORT", apiAddr)
	}
	return start(apiAddr, "127.0.0.1:"+port, links)
}

// start starts the proxies and the API; guardHost "" means the API's own
// address.
func start(apiAddr, guardHost string, links []Link) (*Proxies, error) {
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := &Proxies{server: server, links: map[string]Link{}, proxies: map[string]*toxiproxy.Proxy{},
		applied: map[string]string{}, stopped: map[string]bool{}}
	for _, l := range links {
		listen := l.Listen
		if listen == "" {
			listen = "127.0.0.1:0"
		}
		px := toxiproxy.NewProxy(server, l.Name(), listen, l.Upstream)
		if err := server.Collection.Add(px, true); err != nil {
			p.Close()
			return nil, fmt.Errorf("links: proxy %s: %w", l.Name(), err)
		}
		p.links[l.Name()], p.proxies[l.Name()] = l, px
	}
	ln, err := net.Listen("tcp", apiAddr)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("links: Toxiproxy's API: %w", err)
	}
	p.apiAddr = ln.Addr().String()
	if guardHost == "" {
		guardHost = p.apiAddr
	}
	p.api = &http.Server{Handler: apiHandler(server, guardHost), ReadHeaderTimeout: 10 * time.Second}
	go p.api.Serve(ln)
	return p, nil
}

// apiHandler serves Toxiproxy's API routes (those of its own server:
// proxies, toxics, reset, version), for requests to addr only: like the
// admin API, it refuses a foreign Host or any Origin, so that no web page
// can change the network.
func apiHandler(s *toxiproxy.ApiServer, addr string) http.Handler {
	r := mux.NewRouter()
	r.HandleFunc("/reset", s.ResetState).Methods("POST")
	r.HandleFunc("/proxies", s.ProxyIndex).Methods("GET")
	r.HandleFunc("/proxies", s.ProxyCreate).Methods("POST")
	r.HandleFunc("/populate", s.Populate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}", s.ProxyShow).Methods("GET")
	r.HandleFunc("/proxies/{proxy}", s.ProxyUpdate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}", s.ProxyDelete).Methods("DELETE")
	r.HandleFunc("/proxies/{proxy}/toxics", s.ToxicIndex).Methods("GET")
	r.HandleFunc("/proxies/{proxy}/toxics", s.ToxicCreate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicShow).Methods("GET")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicUpdate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicDelete).Methods("DELETE")
	r.HandleFunc("/version", s.Version).Methods("GET")
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Host != addr || req.Header.Get("Origin") != "" || req.Header.Get("Sec-Fetch-Site") == "cross-site" {
			http.Error(w, "Toxiproxy's API answers only requests for "+addr+", from no web page", http.StatusForbidden)
			return
		}
		r.ServeHTTP(w, req)
	})
}

// APIAddr is where Toxiproxy's HTTP API listens (host:port).
func (p *Proxies) APIAddr() string { return p.apiAddr }

// Addr returns where from dials to, through its link's proxy, or "" when
// there is no such link.
func (p *Proxies) Addr(from, to string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	px, ok := p.proxies[Link{From: from, To: to}.Name()]
	if !ok {
		return ""
	}
	px.Lock()
	defer px.Unlock()
	return px.Listen
}

// Apply makes the links' toxics match rules: each link to an instance
// gets the toxic of the most specific rule that faults.TCP accepts for it
// (the instance's own, else its service's), and loses the one it had when
// no such rule is left. A refuse rule stops the link's proxy, so that
// connects are refused, until the rule goes. It returns the errors of the
// links it could not change, and changes the others.
func (p *Proxies) Apply(rules []faults.Rule) error {
	want := map[string]faults.Rule{} // by instance or service name
	for _, r := range rules {
		if faults.TCP(r) {
			want[r.Service] = r
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	names := make([]string, 0, len(p.links))
	for name := range p.links {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		l := p.links[name]
		r, ok := want[l.To]
		if !ok {
			r, ok = want[metrics.ServiceOf(l.To)]
		}
		spec := ""
		if ok {
			spec = r.String()
		}
		if p.applied[name] == spec {
			continue
		}
		if err := p.set(name, r, ok); err != nil {
			errs = append(errs, fmt.Errorf("links: %s: %w", name, err))
			continue
		}
		p.applied[name] = spec
	}
	return errors.Join(errs...)
}

// set replaces the link's toxic with r's (none when !ok). The caller
// holds p.mu.
func (p *Proxies) set(name string, r faults.Rule, ok bool) error {
	px := p.proxies[name]
	if px.Toxics.GetToxic(ToxicName) != nil {
		if err := px.Toxics.RemoveToxic(context.Background(), ToxicName); err != nil {
			return err
		}
	}
	if p.stopped[name] && (!ok || r.Fault.Connect != memnet.Refused) {
		if err := px.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			return err
		}
		delete(p.stopped, name)
	}
	if !ok {
		return nil
	}
	if r.Fault.Connect == memnet.Refused {
		px.Stop()
		p.stopped[name] = true
		return nil
	}
	body, err := json.Marshal(Toxic(r.Fault))
	if err != nil {
		return err
	}
	_, err = px.Toxics.AddToxicJson(bytes.NewReader(body))
	return err
}

// ToxicSpec is a toxic as Toxiproxy's API writes it.
type ToxicSpec struct {
	Name       string           `json:"name"`
	Type       string           `json:"type"`
	Stream     string           `json:"stream"`
	Toxicity   float32          `json:"toxicity"`
	Attributes map[string]int64 `json:"attributes"`
}

// Toxic is the toxic that stands for f, a fault that faults.TCP accepts
// other than refuse (which stops the proxy instead): blackhole is the
// timeout toxic with timeout 0 (data stops, the connection stays open),
// reset is reset_peer, latency (fixed, jitter) is latency on the answers,
// SlowClose is slow_close, Bandwidth is bandwidth (KB/s), LimitData is
// limit_data (bytes). Probability becomes the toxicity: the share of
// connections it applies to.
func Toxic(f faults.Fault) ToxicSpec {
	t := ToxicSpec{Name: ToxicName, Stream: "downstream", Toxicity: 1, Attributes: map[string]int64{}}
	if f.Probability > 0 {
		t.Toxicity = float32(f.Probability)
	}
	switch {
	case f.Connect == memnet.BlackHoled:
		t.Type, t.Stream, t.Attributes["timeout"] = "timeout", "upstream", 0
	case f.Reset:
		t.Type, t.Stream, t.Attributes["timeout"] = "reset_peer", "upstream", 0
	case f.SlowClose > 0:
		t.Type, t.Attributes["delay"] = "slow_close", f.SlowClose.Milliseconds()
	case f.Bandwidth > 0:
		t.Type, t.Attributes["rate"] = "bandwidth", f.Bandwidth
	case f.LimitData > 0:
		t.Type, t.Attributes["bytes"] = "limit_data", f.LimitData
	default:
		t.Type = "latency"
		t.Attributes["latency"], t.Attributes["jitter"] = f.Latency.Milliseconds(), f.Jitter.Milliseconds()
	}
	return t
}

// Close stops every proxy and the API.
func (p *Proxies) Close() {
	if p.api != nil {
		p.api.Close()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, px := range p.proxies {
		px.Stop()
	}
}
