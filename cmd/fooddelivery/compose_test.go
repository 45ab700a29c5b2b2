package main

import (
	"bytes"
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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stack is a run of compose.yaml under its own project name and port.
type stack struct {
	dir, project, port string
	toxiproxy          string     // the published port of Toxiproxy's API
	p                  *processes // its checkout helpers, on the published port
}

func (s *stack) compose(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker-compose", append([]string{"-f", filepath.Join(s.dir, "compose.yaml"), "-p", s.project}, args...)...)
	cmd.Env = append(os.Environ(), "FOODDELIVERY_PORT="+s.port, "TOXIPROXY_PORT="+s.toxiproxy)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "docker-compose %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// chargedTwice reads fooddelivery_orders_charged_more_than_once from the
// gateway's /metrics, which adds payment's ledger to its own.
func (s *stack) chargedTwice(t *testing.T) int {
	t.Helper()
	resp, err := s.p.client.Get("http://127.0.0.1:" + s.port + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^fooddelivery_orders_charged_more_than_once (\d+)`).FindSubmatch(raw)
	require.NotNil(t, m, "the gateway's /metrics has fooddelivery_orders_charged_more_than_once:\n%s", raw)
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// The compose stack runs where Docker does: one container per service
// from an image built here (a static binary on scratch), a checkout end
// to end, payment and the order service killed and started again with
// nothing lost, and payment killed in the middle of charges again and
// again with no card charged twice.
func TestComposeStackSurvivesPaymentCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image and starts eight containers")
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("docker-compose is not on the PATH: the compose stack is not run here (internal/composefile checks the file without Docker)")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v): the compose stack is not run here (internal/composefile checks the file without Docker)\n%s", err, out)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on the PATH, so the image's binary cannot be built")
	}

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "deploy", "data"), 0o755))
	for _, f := range []string{"compose.yaml", "deploy/Dockerfile"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), raw, 0o644))
	}
	build := exec.Command(goTool, "build", "-o", filepath.Join(dir, "deploy", "fooddelivery"), ".")
	build.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0", "GOARCH="+runtime.GOARCH)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "the static binary for the image: %s", out)

	freePort := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		_, port, _ := net.SplitHostPort(l.Addr().String())
		return port
	}
	port := freePort()
	s := &stack{dir: dir, project: fmt.Sprintf("fdtest%d", os.Getpid()), port: port, toxiproxy: freePort()}
	s.p = &processes{url: "http://127.0.0.1:" + port + "/graphql", client: &http.Client{Timeout: 20 * time.Second}}
	defer func() {
		if t.Failed() {
			t.Logf("the stack's logs:\n%s", s.compose(t, "logs", "--no-color", "--tail=20"))
		}
		s.compose(t, "down", "-v")
	}()
	start := time.Now()
	s.compose(t, "up", "--build", "-d")
	waitFor(t, "the stack's gateway to place an order", func() bool { return s.p.checkout() == "PLACED" })
	t.Logf("compose stack built, up and serving checkouts %.1fs after up", time.Since(start).Seconds())

	// The order service reaches payment through Toxiproxy's container: a
	// refuse rule set on the gateway stops that link's proxy.
	resp, err := s.p.client.Get("http://127.0.0.1:" + s.toxiproxy + "/proxies/order-payment")
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "Toxiproxy's API, published on 127.0.0.1: %s", raw)
	assert.Contains(t, string(raw), `"upstream":"payment:9103"`)
	s.p.fault(t, "payment=refuse")
	waitFor(t, "checkouts to fail while Toxiproxy refuses the connections to payment", func() bool { return s.p.checkout() != "PLACED" })
	s.p.unfault(t)
	waitFor(t, "checkouts to succeed once the link is back", func() bool { return s.p.checkout() == "PLACED" })

	s.compose(t, "kill", "payment")
	assert.NotEqual(t, "PLACED", s.p.checkout(), "with payment's container killed, no checkout is paid")
	s.compose(t, "start", "payment")
	back := waitFor(t, "checkouts to succeed once payment is started again", func() bool { return s.p.checkout() == "PLACED" })
	t.Logf("payment started again: checkouts succeed after %.1fs", back.Seconds())

	_, id := s.p.placeOne(t)
	s.compose(t, "kill", "order")
	s.compose(t, "start", "order")
	waitFor(t, "the order service to answer after its restart", func() bool { return s.p.checkout() == "PLACED" })
	assert.Equal(t, "PLACED", s.p.lookup(t, id), "order %s, placed before the order service's container was killed, is found after it started again", id)

	container := strings.TrimSpace(s.compose(t, "ps", "-q", "payment"))
	restarts := func() int {
		inspect, err := exec.Command("docker", "inspect", "-f", "{{.RestartCount}}", container).CombinedOutput()
		require.NoError(t, err, "%s", inspect)
		n, _ := strconv.Atoi(string(bytes.TrimSpace(inspect)))
		return n
	}
	s.p.fault(t, "payment:POST /charges=crash,p=0.5")
	placed, tried := 0, 0
	waitFor(t, "payment to crash in the middle of charges three times, and Docker to restart it (restart: on-failure)", func() bool {
		tried++
		if s.p.checkout() == "PLACED" {
			placed++
		}
		return restarts() >= 3
	})
	s.p.unfault(t)
	n := restarts()
	waitFor(t, "checkouts to succeed after the crashes", func() bool { return s.p.checkout() == "PLACED" })
	assert.Zero(t, s.chargedTwice(t), "with lab 08's keys and payment's journal on its volume, no order was charged twice across %d crashes", n)
	t.Logf("%d crashes of payment, %d of %d checkouts placed meanwhile, 0 orders charged twice", n, placed, tried)
}
