package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/admin"
	"github.com/gophereats/resilience/fooddelivery/checker"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/links"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/supervisor"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// peerFlags collects the repeatable -peer name=host:port flag.
type peerFlags []string

func (p *peerFlags) String() string { return strings.Join(*p, " ") }

func (p *peerFlags) Set(spec string) error {
	*p = append(*p, spec)
	return nil
}

// parsePeers reads the name=host:port values of flag (-peer, -via) into
// addresses by instance name.
func parsePeers(flag string, specs []string, container bool) (map[string]string, error) {
	peers := map[string]string{}
	for _, spec := range specs {
		name, addr, ok := strings.Cut(spec, "=")
		if !ok || name == "" || addr == "" {
			return nil, usagef("%s %q: want name=host:port, for example %s payment=127.0.0.1:9104", flag, spec, flag)
		}
		if !knownService(name) || name == "menu" {
			return nil, usagef("%s %s: the system has no instance %q; instances are %s", flag, spec, name, strings.Join(instanceNames(), ", "))
		}
		if _, dup := peers[name]; dup {
			return nil, usagef("%s %s: %s already has an address (%s)", flag, spec, name, peers[name])
		}
		if err := memnet.NewLoopback().SetRemote(name, addr, peerHost(container)); err != nil {
			return nil, usagef("%s %s: %v", flag, spec, err)
		}
		peers[name] = addr
	}
	return peers, nil
}

// peerHost says which host names a peer's address may have besides
// loopback ones: with -container, a container's name on the compose
// network (letters, digits and dashes, no dot, so never a host on the
// internet); otherwise none.
func peerHost(container bool) func(string) bool {
	if !container {
		return nil
	}
	return func(host string) bool {
		if host == "" || strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return false
		}
		return host[0] >= 'a' && host[0] <= 'z'
	}
}

// loopbackHost returns the Host header a request to addr (host:port) of
// another process carries: the loopback name with addr's port, which the
// admin guard of that process accepts whether addr names it by loopback
// address or, in compose, by container name.
func loopbackHost(addr string) string {
	if _, port, err := net.SplitHostPort(addr); err == nil {
		return "127.0.0.1:" + port
	}
	return addr
}

// instanceNames lists every instance a process may run with -service.
func instanceNames() []string {
	return slices.DeleteFunc(serviceNames(), func(n string) bool { return n == "menu" })
}

// serveOne is run for -service NAME: the one instance, on opts.addr, its
// peers found through -peer. Every instance but the gateway mirrors the
// fault rules of the gateway's admin API (where -fault, the dashboard
// and the scenarios put them), so a rule reaches the process it is about,
// and the connect faults reach the processes that dial.
func serveOne(ctx context.Context, sys *system.System, opts options, ring *tracing.Ring, stdout, stderr io.Writer) error {
	for _, r := range opts.faults {
		if err := sys.Faults.Set(r.Service, r.Route, r.Fault); err != nil {
			return &usageError{fmt.Errorf("-fault %s: %w", r, err)}
		}
	}
	addr := sys.Network.TCPAddr(opts.service)
	started := time.Now()
	paths := map[string]http.HandlerFunc{
		snapshotPath: func(w http.ResponseWriter, r *http.Request) {
			raw, err := sys.Metrics.Snapshot().MarshalWire()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(raw)
		},
		processPath: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(processInfo{Service: opts.service, PID: os.Getpid(), Started: started})
		},
		crashPath: func(w http.ResponseWriter, r *http.Request) { serveCrash(w, r, sys.Faults, opts.service) },
	}
	if ring != nil {
		paths[spansPath] = serveSpans(ring)
	}
	switch opts.service {
	case "payment":
		paths[checker.LedgerPath] = checker.ServeStore(checker.LocalStore{Ledger: sys.Ledger}).ServeHTTP
	case "order":
		paths[checker.OrderPath] = checker.ServeStore(checker.LocalStore{Orders: sys.Store}).ServeHTTP
	}
	for path, h := range paths {
		method := http.MethodGet
		if path == crashPath {
			method = http.MethodPost
		}
		g, err := admin.Guard(addr, onlyMethod(method, path, h))
		if err != nil {
			return err
		}
		if err := sys.Mount(path, g); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s listening on %s (pid %d)\n", opts.service, addr, os.Getpid())
	if gw, ok := opts.peers["gateway"]; ok {
		go mirrorFaults(ctx, sys.Faults, "http://"+gw+"/admin/faults", stderr)
	}
	<-ctx.Done()
	return nil
}

// waitForPeers waits until every peer accepts a connection, for at most
// limit (a peer still starting fails the first requests otherwise).
func waitForPeers(ctx context.Context, peers map[string]string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for _, addr := range peers {
		for time.Now().Before(deadline) && ctx.Err() == nil {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// The routes a process of -processes other than the gateway's serves,
// behind the admin guard: its counters (metrics.Snapshot.MarshalWire),
// for the gateway's process to add to its dashboard and /metrics; which
// process it is (processInfo), for the gateway's process to see crashes
// and restarts; and a crash on request (POST /admin/crash on the gateway
// passes it on).
const (
	snapshotPath = "/admin/snapshot"
	processPath  = "/admin/process"
	crashPath    = "/admin/crash"
)

// processInfo is what processPath answers: the service, its pid and when
// it started.
type processInfo struct {
	Service string    `json:"service"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// onlyMethod answers requests with method by h, and others 405.
func onlyMethod(method, path string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			http.Error(w, path+" takes "+method, http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// crashDelay is how long a process asked to crash now waits, so that its
// 202 leaves first.
const crashDelay = 50 * time.Millisecond

// serveCrash is a process's own POST /admin/crash: {"when": "now"} kills
// it after crashDelay; {"when": "next-charge"} (payment only) arms in to
// kill it in its next charge, after the charge is stored.
func serveCrash(w http.ResponseWriter, r *http.Request, in *faults.Injector, service string) {
	var body struct {
		When string `json:"when"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&body); err != nil {
		fooddelivery.WriteError(w, http.StatusBadRequest, "bad_json", `the body is not {"when": "now"}: `+err.Error())
		return
	}
	switch {
	case body.When == admin.CrashNow:
		fooddelivery.WriteJSON(w, http.StatusAccepted, map[string]string{"service": service, "when": body.When})
		go func() {
			time.Sleep(crashDelay)
			crashNow()
		}()
	case body.When == admin.CrashNextCharge && service == "payment":
		if err := in.CrashNext("payment", "POST /charges"); err != nil {
			fooddelivery.WriteError(w, http.StatusConflict, "invalid_crash", err.Error())
			return
		}
		fooddelivery.WriteJSON(w, http.StatusAccepted, map[string]string{"service": service, "when": body.When})
	default:
		fooddelivery.WriteError(w, http.StatusBadRequest, "invalid_crash",
			fmt.Sprintf(`%s cannot crash %s: "when" is %q, or %q for payment`, service, fooddelivery.Quote(body.When), admin.CrashNow, admin.CrashNextCharge))
	}
}

// crashPeers returns the gateway's admin.Config.Crash in -processes and
// compose: the gateway's own process is killed after crashDelay, any
// other's is asked through its own crashPath at its address in peers
// (not through Toxiproxy, whose faults must not stop a crash).
func crashPeers(peers map[string]string) func(ctx context.Context, service, when string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context, service, when string) error {
		if service == "gateway" {
			go func() {
				time.Sleep(crashDelay)
				crashNow()
			}()
			return nil
		}
		addr, ok := peers[service]
		if !ok {
			return fmt.Errorf("%w: the system has no process %s; processes are %s", admin.ErrCrash, fooddelivery.Quote(service), strings.Join(instanceNames(), ", "))
		}
		body, _ := json.Marshal(map[string]string{"when": when})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+crashPath, strings.NewReader(string(body)))
		if err != nil {
			return err
		}
		req.Host = loopbackHost(addr)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("%w: %s does not answer at %s (%v): it may be down or restarting already; try again once it is back", admin.ErrCrashUnavailable, service, addr, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			return fmt.Errorf("%w: %s answered %s: %s", admin.ErrCrash, service, resp.Status, strings.TrimSpace(string(msg)))
		}
		return nil
	}
}

// watchEvery is how often the gateway's process asks each other process
// which it is.
const watchEvery = 250 * time.Millisecond

// watchPeers logs each crash and restart of the processes at peers into
// log (which the dashboard shows), until ctx is done: a process that
// stops answering processPath, and the same service answering again,
// with its new pid.
func watchPeers(ctx context.Context, peers map[string]string, log *scenario.Log) {
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	defer hc.CloseIdleConnections()
	type state struct {
		seen     bool // answered once
		up       bool
		pid      int
		downedAt time.Time
	}
	states := map[string]*state{}
	watching := time.Now()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for name, addr := range peers {
			st := states[name]
			if st == nil {
				st = &state{}
				states[name] = st
			}
			info, err := askProcess(ctx, hc, addr)
			if ctx.Err() != nil {
				return
			}
			switch {
			case err != nil && st.up:
				st.up, st.downedAt = false, time.Now()
				log.Add(scenario.KindCrash, "supervisor", fmt.Sprintf("%s stopped answering (pid %d)", name, st.pid))
			case err == nil && st.seen && info.PID != st.pid:
				if st.up { // it died and came back between two looks
					st.downedAt = info.Started
					log.Add(scenario.KindCrash, "supervisor", fmt.Sprintf("%s stopped answering (pid %d)", name, st.pid))
				}
				log.Add(scenario.KindRestart, "supervisor", fmt.Sprintf("%s restarted: pid %d, answering %.1f s after it stopped",
					name, info.PID, max(0, time.Since(st.downedAt).Seconds())))
			case err == nil && !st.seen && info.Started.After(watching):
				// it started after the watch began: it died and came back
				// before the first look
				log.Add(scenario.KindCrash, "supervisor", fmt.Sprintf("%s stopped answering", name))
				log.Add(scenario.KindRestart, "supervisor", fmt.Sprintf("%s restarted: pid %d", name, info.PID))
			case err == nil && st.seen && !st.up:
				log.Add(scenario.KindRestart, "supervisor", fmt.Sprintf("%s answers again (pid %d, not restarted)", name, info.PID))
			}
			if err == nil {
				st.seen, st.up, st.pid = true, true, info.PID
			}
		}
	}
}

func askProcess(ctx context.Context, hc *http.Client, addr string) (processInfo, error) {
	var info processInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+processPath, nil)
	if err != nil {
		return info, err
	}
	req.Host = loopbackHost(addr)
	resp, err := hc.Do(req)
	if err != nil {
		return info, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return info, errors.New(resp.Status)
	}
	return info, json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&info)
}

// addSources makes the snapshots of sys (the gateway's process) include
// those of the processes at peers.
func addSources(sys *system.System, peers map[string]string) {
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	for _, addr := range peers {
		url := "http://" + addr + snapshotPath
		sys.Metrics.AddSource(func() (metrics.Snapshot, bool) {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				return metrics.Snapshot{}, false
			}
			req.Host = loopbackHost(addr)
			resp, err := hc.Do(req)
			if err != nil {
				return metrics.Snapshot{}, false
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
			if err != nil || resp.StatusCode != http.StatusOK {
				return metrics.Snapshot{}, false
			}
			snap, err := metrics.UnmarshalWire(raw)
			return snap, err == nil
		})
	}
}

// mirrorEvery is how often a process of -processes reads the gateway's
// fault rules.
const mirrorEvery = 200 * time.Millisecond

// followRules reads the fault rules url lists (GET /admin/faults) every
// mirrorEvery and hands them to apply, until ctx is done. While the
// gateway is down nothing is applied, so the rules stay as they were. A
// spec it cannot read is reported to stderr once.
func followRules(ctx context.Context, url string, stderr io.Writer, apply func([]faults.Rule)) {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	complained := map[string]bool{}
	t := time.NewTicker(mirrorEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		specs, err := readRules(ctx, hc, url)
		if err != nil {
			continue
		}
		var rules []faults.Rule
		for _, spec := range specs {
			r, err := faults.Parse(spec)
			if err != nil {
				if !complained[spec] {
					complained[spec] = true
					fmt.Fprintf(stderr, "fault rule %q from the gateway: %v\n", spec, err)
				}
				continue
			}
			rules = append(rules, r)
		}
		apply(rules)
	}
}

// mirrorFaults keeps in's rules the same as those url lists, until ctx
// is done (followRules).
func mirrorFaults(ctx context.Context, in *faults.Injector, url string, stderr io.Writer) {
	complained := map[string]bool{}
	followRules(ctx, url, stderr, func(rules []faults.Rule) {
		want := map[[2]string]faults.Rule{}
		for _, r := range rules {
			want[[2]string{r.Service, r.Route}] = r
		}
		have := map[[2]string]string{}
		for _, r := range in.List() {
			k := [2]string{r.Service, r.Route}
			have[k] = r.String()
			if _, ok := want[k]; !ok {
				in.Remove(r.Service, r.Route)
			}
		}
		for k, r := range want {
			if have[k] == r.String() {
				continue
			}
			if err := in.Set(r.Service, r.Route, r.Fault); err != nil && !complained[r.String()] {
				complained[r.String()] = true
				fmt.Fprintf(stderr, "fault rule %q from the gateway: %v\n", r, err)
			}
		}
	})
}

func readRules(ctx context.Context, hc *http.Client, url string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Host = loopbackHost(req.URL.Host)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var body struct {
		Rules []struct {
			Spec string `json:"spec"`
		} `json:"rules"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return nil, err
	}
	specs := make([]string, len(body.Rules))
	for i, r := range body.Rules {
		specs[i] = r.Spec
	}
	return specs, nil
}

// runProcesses is run for -processes: every instance as a child process
// of this one (the same executable with -service), supervised until ctx
// is done. args are the command line, passed on to every child.
func runProcesses(ctx context.Context, args []string, opts options, stdout io.Writer) error {
	runStart := time.Now()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-processes: finding this program to start its children: %w", err)
	}
	names := instanceNames()
	addrs := map[string]string{}
	for _, name := range names {
		addr := "127.0.0.1:0"
		if name == "gateway" {
			addr = opts.addr
		}
		if addrs[name], err = freePort(addr); err != nil {
			return fmt.Errorf("-processes: an address for %s: %w", name, err)
		}
	}
	proxies, err := links.Start(opts.toxiproxy, systemLinks(addrs, nil))
	if err != nil {
		return fmt.Errorf("-processes: Toxiproxy on the links between the processes: %w (pick another port with -toxiproxy 127.0.0.1:PORT)", err)
	}
	defer proxies.Close()
	data := opts.data
	if data == "" {
		if data, err = os.MkdirTemp("", "fooddelivery-data-"); err != nil {
			return fmt.Errorf("-processes: a temporary folder for the orders and payment's ledger: %w (give one with -data DIR)", err)
		}
		defer os.RemoveAll(data)
	}
	var children []supervisor.Child
	for _, name := range names {
		a := append(withoutProcesses(args), "-service", name, "-addr", addrs[name], "-supervised", "-tcp-faults", "-data", data,
			"-run-start", strconv.FormatInt(runStart.UnixMilli(), 10))
		for _, peer := range names {
			if peer == name {
				continue
			}
			a = append(a, "-peer", peer+"="+addrs[peer])
			if via := proxies.Addr(name, peer); via != "" {
				a = append(a, "-via", peer+"="+via)
			}
		}
		children = append(children, supervisor.Child{Name: name, Args: a, Addr: addrs[name]})
	}
	start := time.Now()
	sup, err := supervisor.Start(ctx, supervisor.Config{Path: exe, Children: children, Out: stdout, RestartDelay: opts.restartDelay})
	if err != nil {
		return fmt.Errorf("-processes: %w", err)
	}
	go followRules(ctx, "http://"+addrs["gateway"]+"/admin/faults", stdout, func(rules []faults.Rule) {
		if err := proxies.Apply(rules); err != nil {
			fmt.Fprintln(stdout, err)
		}
	})
	url := "http://" + addrs["gateway"] + "/graphql"
	fmt.Fprint(stdout, processTable(names, addrs, sup.PIDs(), time.Since(start), opts.restartDelay))
	fmt.Fprintf(stdout, "durable state:    payment's ledger and keys in %s, the orders in %s (-data)\n",
		filepath.Join(data, "payment.db"), filepath.Join(data, "order.db"))
	fmt.Fprintf(stdout, "Toxiproxy:        every link between two services is a proxy (gateway-order, order-payment, ...);\n"+
		"                  its API is http://%s (toxiproxy-cli -host http://%s list);\n"+
		"                  -fault kinds on connections (refuse, blackhole, reset, latency, slowclose, bandwidth,\n"+
		"                  limitdata, for a whole service) become its toxics, the others act inside the services\n\n",
		proxies.APIAddr(), proxies.APIAddr())
	fmt.Fprint(stdout, banner(url, opts))
	<-ctx.Done()
	sup.Stop()
	fmt.Fprintln(stdout, "stopped")
	return nil
}

// toxiproxyService is the -service name of Toxiproxy's own process
// (compose.yaml's toxiproxy container).
const toxiproxyService = "toxiproxy"

// systemLinks lists the links between the services, the gateway's first:
// each to its callee's address in addrs, listening where listen says
// (by link name; "" for a free loopback port).
func systemLinks(addrs, listen map[string]string) []links.Link {
	var ls []links.Link
	for _, from := range []string{"gateway", "order"} {
		for _, to := range callees(from) {
			l := links.Link{From: from, To: to, Upstream: addrs[to]}
			l.Listen = listen[l.Name()]
			ls = append(ls, l)
		}
	}
	return ls
}

// parseLinks reads the -link from-to=host:port flags, which only
// -service toxiproxy takes, and which must then name every link once.
func parseLinks(specs []string, service string, container bool) (map[string]string, error) {
	if service != toxiproxyService {
		if len(specs) > 0 {
			return nil, usagef("-link says where a link's proxy listens, for -service %s only", toxiproxyService)
		}
		return nil, nil
	}
	var names []string
	for _, l := range systemLinks(nil, nil) {
		names = append(names, l.Name())
	}
	out := map[string]string{}
	for _, spec := range specs {
		name, addr, ok := strings.Cut(spec, "=")
		if !ok || !slices.Contains(names, name) {
			return nil, usagef("-link %s: want from-to=host:port with a link of the system: %s", fooddelivery.Quote(spec), strings.Join(names, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, usagef("-link %s: %s already listens on %s", spec, name, out[name])
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || !(container && host == "0.0.0.0") && checkLoopback(addr) != nil {
			return nil, usagef("-link %s: listen on a loopback host:port, or 0.0.0.0:PORT with -container", spec)
		}
		if port == "0" {
			return nil, usagef("-link %s: give the proxy a port of its own: the callers' -via must name it, and port 0 picks one nobody knows", spec)
		}
		out[name] = addr
	}
	for _, name := range names {
		if _, ok := out[name]; !ok {
			return nil, usagef("-service %s needs -link %s=host:port (every link has its proxy)", toxiproxyService, name)
		}
	}
	return out, nil
}

// serveToxiproxy is run for -service toxiproxy: a proxy per link, from
// -link's address to the callee's -peer address, and Toxiproxy's API on
// -toxiproxy; the fault rules of the gateway (its -peer) become toxics,
// as the parent of -processes makes them.
func serveToxiproxy(ctx context.Context, opts options, stdout io.Writer) error {
	for _, name := range instanceNames() {
		if _, ok := opts.peers[name]; !ok {
			return usagef("-service %s needs -peer %s=host:port (every instance's address: the links' upstreams, and the gateway's rules)", toxiproxyService, name)
		}
	}
	start := links.Start
	if opts.container {
		start = links.StartContainer
	}
	proxies, err := start(opts.toxiproxy, systemLinks(opts.peers, opts.links))
	if err != nil {
		return err
	}
	defer proxies.Close()
	fmt.Fprintf(stdout, "toxiproxy: API on %s (pid %d); the links:\n", proxies.APIAddr(), os.Getpid())
	for _, l := range systemLinks(opts.peers, opts.links) {
		fmt.Fprintf(stdout, "  %-16s %s -> %s\n", l.Name(), l.Listen, l.Upstream)
	}
	followRules(ctx, "http://"+opts.peers["gateway"]+"/admin/faults", stdout, func(rules []faults.Rule) {
		if err := proxies.Apply(rules); err != nil {
			fmt.Fprintln(stdout, err)
		}
	})
	return nil
}

// crashNow ends this process at once, as SIGKILL does (a crash fault):
// no deferred function runs and nothing is flushed.
func crashNow() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	os.Exit(137) // where a process cannot kill itself
}

// callees lists the instances from calls: the gateway calls auth, order,
// courier and the menu replicas; the order service calls payment,
// courier and the menu replicas; the others call nobody.
func callees(from string) []string {
	var menus []string
	for i := range menuReplicas {
		menus = append(menus, fmt.Sprintf("menu-%d", i+1))
	}
	switch from {
	case "gateway":
		return append([]string{"auth", "order", "courier"}, menus...)
	case "order":
		return append([]string{"payment", "courier"}, menus...)
	}
	return nil
}

// processTable lists each child process: its instance, address and pid.
func processTable(names []string, addrs map[string]string, pids map[string]int, took, restartDelay time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "one process per service (-processes, this parent pid %d), all up in %.1fs; a child that dies is restarted after %v:\n",
		os.Getpid(), took.Seconds(), restartDelay)
	for _, name := range names {
		fmt.Fprintf(&b, "  %-8s %-21s pid %d\n", name, addrs[name], pids[name])
	}
	b.WriteString("\n")
	return b.String()
}

// freePort returns addr, or for port 0 a free port on addr's host, found
// by listening on it and closing it again (another program could take it
// before the child binds it; the child then fails at start and says so).
func freePort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port != "0" {
		return addr, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// withoutProcesses returns args without the -processes flag, in any of
// its spellings.
func withoutProcesses(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
			continue
		}
		switch strings.TrimLeft(a, "-") {
		case "processes", "processes=true", "processes=1", "processes=t", "processes=TRUE", "processes=True", "processes=T":
			continue
		}
		out = append(out, a)
	}
	return out
}

// peerStore reads payment's ledger and the orders from their processes'
// own addresses in peers (not through a -via link, and outside their
// routes' faults), for the checker in the gateway's process.
func peerStore(peers map[string]string) checker.Store {
	return checker.HTTPStore{Client: &http.Client{Timeout: 5 * time.Second},
		Payment: "http://" + peers["payment"], PaymentHost: loopbackHost(peers["payment"]),
		Order: "http://" + peers["order"], OrderHost: loopbackHost(peers["order"])}
}

// spansPath is where a process that runs one service serves the spans its
// ring holds: every trace, or ?id= one (404 when it holds none of it).
const spansPath = "/admin/spans"

// serveSpans answers spansPath from ring.
func serveSpans(ring *tracing.Ring) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if id := r.URL.Query().Get("id"); id != "" {
			t, ok := ring.Trace(id)
			if !ok {
				http.Error(w, "no spans of that trace here", http.StatusNotFound)
				return
			}
			json.NewEncoder(w).Encode(t)
			return
		}
		json.NewEncoder(w).Encode(ring.Traces())
	}
}

// peerTraces is the traces of every process, for the gateway's GET
// /admin/traces: its own ring's, with the spans each other process holds
// of the same traces added (a trace crosses every process, and each ring
// holds the spans of its own). A process that does not answer within
// its timeout is left out.
type peerTraces struct {
	local *tracing.Ring
	peers map[string]string
	hc    *http.Client
}

func newPeerTraces(local *tracing.Ring, peers map[string]string) *peerTraces {
	return &peerTraces{local: local, peers: peers, hc: &http.Client{Timeout: time.Second}}
}

// fetch GETs spansPath?query from every peer at once and hands each
// answer's body to use, in the peers' name order.
func (p *peerTraces) fetch(query string, use func(raw []byte)) {
	names := slices.Sorted(maps.Keys(p.peers))
	bodies := make([][]byte, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		addr := p.peers[name]
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodGet, "http://"+addr+spansPath+query, nil)
			if err != nil {
				return
			}
			req.Host = loopbackHost(addr)
			resp, err := p.hc.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				bodies[i], _ = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			}
		})
	}
	wg.Wait()
	for _, b := range bodies {
		if b != nil {
			use(b)
		}
	}
}

// Traces implements admin.TraceSource: every trace any process holds,
// by the start of its earliest span.
func (p *peerTraces) Traces() []tracing.Trace {
	byID := map[string]*tracing.Trace{}
	var order []string
	add := func(ts []tracing.Trace) {
		for _, t := range ts {
			if have, ok := byID[t.TraceID]; ok {
				have.Spans = append(have.Spans, t.Spans...)
				continue
			}
			t := t
			byID[t.TraceID] = &t
			order = append(order, t.TraceID)
		}
	}
	add(p.local.Traces())
	p.fetch("", func(raw []byte) {
		var ts []tracing.Trace
		if json.Unmarshal(raw, &ts) == nil {
			add(ts)
		}
	})
	out := make([]tracing.Trace, 0, len(order))
	for _, id := range order {
		t := byID[id]
		slices.SortStableFunc(t.Spans, func(a, b tracing.Span) int { return a.Start.Compare(b.Start) })
		out = append(out, *t)
	}
	slices.SortStableFunc(out, func(a, b tracing.Trace) int { return a.Spans[0].Start.Compare(b.Spans[0].Start) })
	return out
}

// Trace implements admin.TraceSource.
func (p *peerTraces) Trace(id string) (tracing.Trace, bool) {
	t, ok := p.local.Trace(id)
	if !ok {
		t = tracing.Trace{TraceID: id}
	}
	p.fetch("?id="+url.QueryEscape(id), func(raw []byte) {
		var more tracing.Trace
		if json.Unmarshal(raw, &more) == nil && more.TraceID == id {
			t.Spans = append(t.Spans, more.Spans...)
			ok = true
		}
	})
	slices.SortStableFunc(t.Spans, func(a, b tracing.Span) int { return a.Start.Compare(b.Start) })
	return t, ok
}
