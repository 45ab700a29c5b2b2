package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/checker"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// processes is a run of the built command with -processes.
type processes struct {
	cmd   *exec.Cmd
	out   *syncBuffer
	url   string
	addrs map[string]string
	// toxiproxy is the address of Toxiproxy's API.
	toxiproxy string
	client    *http.Client
}

// buildCommand builds cmd/fooddelivery once per test into a temporary
// directory: -processes starts its children from its own executable,
// which a test binary is not.
func buildCommand(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on the PATH, so the program cannot be built for its processes")
	}
	exe := filepath.Join(t.TempDir(), "fooddelivery")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	out, err := exec.Command(goTool, "build", "-o", exe, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return exe
}

var processLine = regexp.MustCompile(`(?m)^  (\S+)\s+(127\.0\.0\.1:\d+)\s+pid (\d+)$`)

// startProcesses runs the built program with -processes and args, and
// waits for its table of processes and its banner.
func startProcesses(t *testing.T, exe string, args ...string) *processes {
	t.Helper()
	p := &processes{out: &syncBuffer{}, addrs: map[string]string{}, client: &http.Client{Timeout: 20 * time.Second}}
	p.cmd = exec.Command(exe, append([]string{"-processes", "-addr", "127.0.0.1:0", "-toxiproxy", "127.0.0.1:0"}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		p.client.CloseIdleConnections()
		for name, addr := range p.addrs {
			if answers(addr) {
				// The children exit once the parent is gone; a slow
				// machine may take a moment.
				waitFor(t, name+" to exit after the parent", func() bool { return !answers(addr) })
			}
		}
	})
	for start := time.Now(); !strings.Contains(p.out.String(), "Press Ctrl-C to stop."); time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("after 60 s still waiting for the banner of -processes; its output so far:\n%s", p.out)
		}
	}
	for _, m := range processLine.FindAllStringSubmatch(p.out.String(), -1) {
		p.addrs[m[1]] = m[2]
	}
	require.Len(t, p.addrs, 8, "one process per instance in the table:\n%s", p.out)
	p.url = "http://" + p.addrs["gateway"] + "/graphql"
	m := regexp.MustCompile(`its API is http://(127\.0\.0\.1:\d+) `).FindStringSubmatch(p.out.String())
	require.NotNil(t, m, "the banner gives Toxiproxy's API:\n%s", p.out)
	p.toxiproxy = m[1]
	return p
}

// fault sets a fault rule through the gateway's admin API.
func (p *processes) fault(t *testing.T, spec string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"spec": spec})
	resp, err := p.client.Post(strings.TrimSuffix(p.url, "/graphql")+"/admin/faults", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /admin/faults %s", spec)
}

// unfault removes every fault rule.
func (p *processes) unfault(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, strings.TrimSuffix(p.url, "/graphql")+"/admin/faults?all=true", nil)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "DELETE /admin/faults?all=true")
}

// pids are the children's latest pids, as each says when it starts
// ("payment | payment listening on ... (pid N)").
func (p *processes) pids() map[string]int {
	pids := map[string]int{}
	re := regexp.MustCompile(`(?m)^(\S+) \| \S+ listening on \S+ \(pid (\d+)\)`)
	for _, m := range re.FindAllStringSubmatch(p.out.String(), -1) {
		pids[m[1]], _ = strconv.Atoi(m[2])
	}
	return pids
}

// checkout places an order through the gateway; it returns the order's
// status, or what went wrong.
func (p *processes) checkout() string {
	body, _ := json.Marshal(map[string]any{"query": placeOrder, "variables": orderInput()})
	req, _ := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+system.SampleToken)
	resp, err := p.client.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			PlaceOrder struct{ Status string } `json:"placeOrder"`
		} `json:"data"`
		Errors []struct{ Message string } `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Sprintf("HTTP %d: %v", resp.StatusCode, err)
	}
	if len(out.Errors) > 0 {
		return out.Errors[0].Message
	}
	return out.Data.PlaceOrder.Status
}

func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// waitFor polls cond every 50 ms for up to 60 s of real time: these tests
// run real processes, and a slow machine must not fail them.
func waitFor(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > time.Minute {
			t.Fatalf("after 60 s still waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// -processes runs every instance as its own process: a checkout crosses
// them, each killed with SIGKILL in turn comes back and checkouts succeed
// again, a fault set on the gateway's admin API reaches payment's
// process, and SIGTERM leaves no child behind.
func TestProcessesServeAndSurviveKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine processes")
	}
	p := startProcesses(t, buildCommand(t))
	require.Equal(t, "PLACED", p.checkout(), "a checkout crosses gateway, auth, menu, order, payment and courier processes")
	resp, err := p.client.Get(strings.TrimSuffix(p.url, "/graphql") + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(metrics), `code="201",instance="payment",route="POST /charges"`,
		"the gateway's /metrics counts the charge, which payment's process served")
	pids := p.pids()
	require.Len(t, pids, 8, "every child said its pid:\n%s", p.out)
	seen := map[int]bool{p.cmd.Process.Pid: true}
	for name, pid := range pids {
		assert.False(t, seen[pid], "%s has a process of its own (pid %d)", name, pid)
		seen[pid] = true
	}

	_, placedBefore := p.placeOne(t)
	for _, name := range []string{"payment", "order", "auth", "courier", "menu-2", "gateway"} {
		old := p.pids()[name]
		proc, err := os.FindProcess(old)
		require.NoError(t, err)
		require.NoError(t, proc.Kill(), "kill -9 %s (pid %d)", name, old)
		took := waitFor(t, name+" to come back and checkouts to succeed", func() bool {
			return p.pids()[name] != old && p.checkout() == "PLACED"
		})
		t.Logf("%s killed: checkouts succeed again after %.1fs", name, took.Seconds())
		if name == "order" {
			assert.Equal(t, "PLACED", p.lookup(t, placedBefore), "order %s, placed before the order service was killed, is found after its restart (order.db in -data)", placedBefore)
		}
	}

	p.fault(t, "payment=error,status=503")
	waitFor(t, "the rule set at the gateway to fail charges in payment's process", func() bool { return p.checkout() != "PLACED" })
	p.unfault(t)
	waitFor(t, "checkouts to succeed once the rule is gone", func() bool { return p.checkout() == "PLACED" })

	if runtime.GOOS == "windows" {
		return // no SIGTERM to send
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.cmd.Wait(), "the parent exits cleanly on SIGTERM:\n%s", p.out)
	for name, addr := range p.addrs {
		assert.False(t, answers(addr), "after SIGTERM nothing listens on %s's address %s", name, addr)
	}
	assert.Contains(t, p.out.String(), "stopped")
}

// Faults on connections become Toxiproxy's toxics on the links between
// the processes: a refused link fails the checkout at once, latency on it
// delays the checkout, and Toxiproxy's API lists every link.
func TestProcessesPutToxiproxyOnEveryLink(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine processes")
	}
	p := startProcesses(t, buildCommand(t))
	resp, err := p.client.Get("http://" + p.toxiproxy + "/proxies")
	require.NoError(t, err)
	var proxies map[string]struct {
		Upstream string `json:"upstream"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&proxies))
	resp.Body.Close()
	assert.Len(t, proxies, 11, "a proxy per link: the gateway to auth, order, courier and three menus, the order service to payment, courier and three menus")
	assert.Equal(t, p.addrs["payment"], proxies["order-payment"].Upstream, "the order-payment link leads to payment's process")

	start := time.Now()
	require.Equal(t, "PLACED", p.checkout())
	assert.GreaterOrEqual(t, time.Since(start), 60*time.Millisecond, "a checkout takes at least payment's usual 60 ms (-latency normal)")
	p.fault(t, "payment=refuse")
	waitFor(t, "a refused order-payment link to fail checkouts", func() bool { return p.checkout() != "PLACED" })
	p.unfault(t)
	p.fault(t, "payment=latency,fixed=600ms")
	waitFor(t, "600 ms on the order-payment link to slow a checkout down", func() bool {
		start := time.Now()
		return p.checkout() == "PLACED" && time.Since(start) >= 600*time.Millisecond
	})
	p.unfault(t)
}

// placeOne places one checkout and returns its status and id.
func (p *processes) placeOne(t *testing.T) (status, id string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": placeOrder, "variables": orderInput()})
	req, _ := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+system.SampleToken)
	resp, err := p.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Data struct {
			PlaceOrder struct{ ID, Status string } `json:"placeOrder"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "PLACED", out.Data.PlaceOrder.Status)
	return out.Data.PlaceOrder.Status, out.Data.PlaceOrder.ID
}

// lookup asks the gateway for order id's status ("" when not found).
func (p *processes) lookup(t *testing.T, id string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { order(id: $id) { id status } }`, "variables": map[string]any{"id": id}})
	req, _ := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+system.SampleToken)
	resp, err := p.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Order *struct{ ID, Status string } `json:"order"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	if out.Data.Order == nil {
		return ""
	}
	return out.Data.Order.Status
}

// chargesPerOrder reads payment's ledger from its own address.
func (p *processes) chargesPerOrder(t *testing.T) map[string]int {
	t.Helper()
	var charges []struct {
		OrderID string `json:"orderId"`
	}
	last := "no answer yet"
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		resp, err := p.client.Get("http://" + p.addrs["payment"] + "/charges")
		if err == nil {
			ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&charges) == nil
			last = resp.Status
			resp.Body.Close()
			if ok {
				break
			}
		} else {
			last = err.Error()
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("after 60 s still waiting for payment to answer GET /charges (last: %s); the processes' output:\n%s", last, p.out)
		}
	}
	per := map[string]int{}
	for _, c := range charges {
		per[c.OrderID]++
	}
	return per
}

// crashCheckouts places checkouts while payment is killed in the middle
// of half its charges (after the ledger write, before the answer), until
// it has seen crashes charges or 60 checkouts, then clears the fault and
// returns payment's charges per order and the orders the gateway
// answered as placed.
func (p *processes) crashCheckouts(t *testing.T, until func(perOrder map[string]int) bool) (perOrder map[string]int, placed []string) {
	t.Helper()
	p.fault(t, "payment:POST /charges=crash,p=0.5")
	for i := 0; i < 60; i++ {
		body, _ := json.Marshal(map[string]any{"query": placeOrder, "variables": orderInput()})
		req, _ := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+system.SampleToken)
		if resp, err := p.client.Do(req); err == nil {
			var out struct {
				Data struct {
					PlaceOrder struct{ ID, Status string } `json:"placeOrder"`
				} `json:"data"`
			}
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if out.Data.PlaceOrder.Status == "PLACED" {
				placed = append(placed, out.Data.PlaceOrder.ID)
			}
		}
		if i >= 10 && until(p.chargesPerOrder(t)) {
			break
		}
	}
	p.unfault(t)
	return p.chargesPerOrder(t), placed
}

// Payment killed in the middle of charges, again and again: with
// idempotency keys (lab 08's solution) every order is charged at most
// once and every checkout answered as placed has its one charge, since
// the journal on disk replays a key's charge after the restart; without
// keys (lab 08 naive: four attempts, no key) the retries charge twice.
func TestProcessesCrashMidChargeChargesOnceWithKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine processes")
	}
	exe := buildCommand(t)
	crashes := func(p *processes) int { return strings.Count(p.out.String(), "payment exited (") }

	keyed := startProcesses(t, exe, "-lab", "08=solution", "-restart-delay", "50ms")
	perOrder, placed := keyed.crashCheckouts(t, func(map[string]int) bool { return crashes(keyed) >= 5 })
	require.GreaterOrEqual(t, crashes(keyed), 3, "payment was killed mid-charge and restarted:\n%s", keyed.out)
	for order, n := range perOrder {
		assert.LessOrEqual(t, n, 1, "with idempotency keys, order %s was charged %d times across %d crashes", order, n, crashes(keyed))
	}
	for _, order := range placed {
		assert.Equal(t, 1, perOrder[order], "checkout %s was answered as placed: it has exactly one charge after the restarts", order)
	}
	t.Logf("with keys: %d crashes, %d orders charged, %d placed, no order charged twice", crashes(keyed), len(perOrder), len(placed))

	naive := startProcesses(t, exe, "-lab", "08=naive", "-restart-delay", "50ms")
	doubles := func(per map[string]int) int {
		n := 0
		for _, c := range per {
			if c > 1 {
				n++
			}
		}
		return n
	}
	perOrder, _ = naive.crashCheckouts(t, func(per map[string]int) bool { return doubles(per) > 0 })
	assert.Positive(t, doubles(perOrder), "without keys a retry after the crash charges again: %d crashes, charges per order %v", crashes(naive), perOrder)
	t.Logf("without keys: %d crashes, %d orders charged twice or more", crashes(naive), doubles(perOrder))
}

// A child whose parent was killed with SIGKILL exits by itself.
func TestProcessesLeaveNoChildWhenTheParentIsKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine processes")
	}
	p := startProcesses(t, buildCommand(t))
	require.NoError(t, p.cmd.Process.Kill())
	p.cmd.Wait()
	for name, addr := range p.addrs {
		took := waitFor(t, name+" to exit after its parent was killed", func() bool { return !answers(addr) })
		t.Logf("%s gone %.1fs after the parent", name, took.Seconds())
	}
}

func TestProcessesFlagsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-processes", "-service", "payment"}, "give one of the two"},
		{[]string{"-service", "menu"}, "no instance"},
		{[]string{"-service", "payment", "-peer", "order"}, "want name=host:port"},
		{[]string{"-service", "payment", "-peer", "order=10.1.2.3:80"}, "only loopback addresses"},
		{[]string{"-service", "payment", "-peer", "payment=127.0.0.1:9000"}, "this process's own service"},
		{[]string{"-peer", "order=127.0.0.1:9000"}, "add -service NAME"},
		{[]string{"-service", "payment", "-peer", "bank=127.0.0.1:9000"}, `no instance "bank"`},
		{[]string{"-container"}, "add -service NAME"},
		{[]string{"-service", "payment", "-addr", "0.0.0.0:9103"}, "loopback only"},
		{[]string{"-service", "payment", "-container", "-peer", "order=db.example.com:80"}, "only loopback addresses"},
		{[]string{"-service", "payment", "-container", "-peer", "order=10.1.2.3:80"}, "only loopback addresses"},
		{[]string{"-restart-delay", "0s"}, "from 1ms to 1m"},
		{[]string{"-scenario", "payment-crash"}, "add -processes"},
		{[]string{"-service", "payment", "-link", "order-payment=127.0.0.1:9207"}, "for -service toxiproxy only"},
		{[]string{"-service", "toxiproxy", "-link", "order-bank=127.0.0.1:9207"}, "want from-to=host:port with a link of the system: gateway-auth,"},
		{[]string{"-service", "toxiproxy", "-link", "order-payment=0.0.0.0:9207"}, "0.0.0.0:PORT with -container"},
		{[]string{"-service", "toxiproxy", "-link", "order-payment=127.0.0.1:9207", "-link", "order-payment=127.0.0.1:9208"}, "already listens on 127.0.0.1:9207"},
		{[]string{"-service", "toxiproxy", "-link", "order-payment=127.0.0.1:9207"}, "needs -link gateway-auth=host:port"},
	} {
		_, err := parseFlags(tc.args)
		var ue *usageError
		if assert.ErrorAs(t, err, &ue, "%v is a usage error", tc.args) {
			assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
		}
	}
	opts, err := parseFlags([]string{"-service", "payment", "-container", "-addr", "0.0.0.0:9103", "-peer", "order=order:9102"})
	require.NoError(t, err, "in a container, a service listens on 0.0.0.0 and finds its peers by container name")
	assert.Equal(t, "order:9102", opts.peers["order"])
	assert.Equal(t, []string{"-lab", "all=solution", "-scenario", "processes"},
		withoutProcesses([]string{"-processes", "-lab", "all=solution", "--processes=true", "-scenario", "processes"}))
}

// syncBuffer is a bytes.Buffer that the child's output and the test
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// admin sends one request to the gateway's admin API and decodes its
// JSON answer; it returns the status.
func (p *processes) admin(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, strings.TrimSuffix(p.url, "/graphql")+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// changes are the descriptions in the gateway's change log of kind.
func (p *processes) changes(t *testing.T, kind string) []string {
	t.Helper()
	var log struct {
		Changes []scenario.Change `json:"changes"`
	}
	require.Equal(t, http.StatusOK, p.admin(t, "GET", "/admin/changes", "", &log))
	var out []string
	for _, c := range log.Changes {
		if c.Kind == kind {
			out = append(out, c.Description)
		}
	}
	return out
}

// check runs the checker through GET /admin/check, waiting while a
// service it reads is still restarting.
func (p *processes) check(t *testing.T) (rep checker.Report, summary string) {
	t.Helper()
	waitFor(t, "the checker to read payment and the orders", func() bool {
		var out struct {
			Summary string         `json:"summary"`
			Report  checker.Report `json:"report"`
		}
		if p.admin(t, "GET", "/admin/check", "", &out) != http.StatusOK {
			return false
		}
		rep, summary = out.Report, out.Summary
		return true
	})
	return rep, summary
}

// crashPayments asks for payment to be killed in its next charge, n
// times, each after payment is back from the one before; the customers
// (-load) keep checking out. It returns how many restarts the change log
// showed.
func (p *processes) crashPayments(t *testing.T, n int) int {
	t.Helper()
	restarts := func() int {
		k := 0
		for _, d := range p.changes(t, scenario.KindRestart) {
			if strings.HasPrefix(d, "payment restarted: pid ") {
				k++
			}
		}
		return k
	}
	for i := range n {
		require.Equal(t, http.StatusAccepted, p.admin(t, "POST", "/admin/crash", `{"service": "payment", "when": "next-charge"}`, nil))
		waitFor(t, fmt.Sprintf("payment's restart %d after a crash in its next charge", i+1), func() bool { return restarts() > i })
	}
	return restarts()
}

// POST /admin/crash kills a process now or in payment's next charge; the
// change log (the dashboard's) shows each crash and each restart; and
// the checker, run after crashes in the middle of charges under load,
// finds no double charge, lost paid order or reused id with idempotency
// keys, and finds the doubles without them.
func TestProcessesCrashOnRequestAndTheCheckerJudges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine processes")
	}
	exe := buildCommand(t)
	keyed := startProcesses(t, exe, "-lab", "08=solution", "-restart-delay", "50ms", "-load", "40", "-latency", "off")
	before := keyed.pids()["courier"]
	require.Equal(t, http.StatusAccepted, keyed.admin(t, "POST", "/admin/crash", `{"service": "courier", "when": "now"}`, nil))
	courierRestarts := func() []string {
		var out []string
		for _, c := range keyed.changes(t, scenario.KindRestart) {
			if strings.HasPrefix(c, "courier ") {
				out = append(out, c)
			}
		}
		return out
	}
	starts := keyed.changes(t, scenario.KindRestart)
	require.NotEmpty(t, starts, "the gateway's process logs its own start")
	assert.Contains(t, starts[0], "gateway's process started", "a change log that begins again after a crash of the gateway says so")
	waitFor(t, "the change log to show courier's crash and restart", func() bool {
		return len(courierRestarts()) > 0
	})
	crashes := keyed.changes(t, scenario.KindCrash)
	require.Len(t, crashes, 2, "the admin's line and the watcher's")
	assert.Equal(t, "crash: courier's process killed", crashes[0])
	// The pid and the time down are known when the watcher saw courier
	// before it died (it looks every 250 ms).
	assert.Regexp(t, fmt.Sprintf(`^courier stopped answering( \(pid %d\))?$`, before), crashes[1])
	waitFor(t, "courier's new pid in the supervisor's output", func() bool { return keyed.pids()["courier"] != before })
	assert.Regexp(t, fmt.Sprintf(`^courier restarted: pid %d(, answering \d+\.\d s after it stopped)?$`, keyed.pids()["courier"]),
		courierRestarts()[0])

	restarts := keyed.crashPayments(t, 4)
	rep, summary := keyed.check(t)
	t.Logf("with keys, %d crashes of payment mid-charge: %s", restarts, summary)
	assert.Positive(t, rep.Placed, "the customers placed orders")
	assert.True(t, rep.OK(), "with idempotency keys on disk nothing is charged twice, lost or reused: %s", summary)
	assert.Zero(t, rep.DoubleCharges, summary)

	naive := startProcesses(t, exe, "-lab", "08=naive", "-restart-delay", "50ms", "-load", "40", "-latency", "off")
	for i := 0; i < 8; i++ {
		naive.crashPayments(t, 1)
		if rep, _ = naive.check(t); rep.DoubleCharges > 0 {
			break
		}
	}
	rep, summary = naive.check(t)
	t.Logf("without keys: %s", summary)
	assert.Positive(t, rep.DoubleCharges, "without keys a retry after the crash charges again: %s", summary)
	assert.Contains(t, summary, "DOUBLE CHARGES (")
	assert.Contains(t, summary, "idempotency key")
}
