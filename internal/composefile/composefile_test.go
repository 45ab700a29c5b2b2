package composefile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// composePath is the file under test, at the repository's root.
var composePath = filepath.Join("..", "..", "compose.yaml")

// services are the containers compose.yaml must run: every service of the
// food-delivery system, and Toxiproxy.
var services = []string{"auth", "courier", "gateway", "menu-1", "menu-2", "menu-3", "order", "payment", "toxiproxy"}

// load reads raw as compose.yaml with env as the environment of the
// docker-compose command, validated against the Compose schema.
func load(t *testing.T, raw []byte, env map[string]string) (*types.Project, error) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Dir(composePath))
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml"), Content: raw}},
		Environment: env,
	}
	return loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("fooddelivery", true)
		o.SkipConsistencyCheck = false
	})
}

// flags returns every value of flag name in a service's command, in order.
func flags(cmd []string, name string) []string {
	var out []string
	for i := 0; i+1 < len(cmd); i++ {
		if cmd[i] == name {
			out = append(out, cmd[i+1])
		}
	}
	return out
}

// port returns the port of a host:port address, or "" for none.
func port(addr string) string {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return ""
	}
	return addr[i+1:]
}

// TestComposeFileLoadsAndHoldsItsPromises loads compose.yaml as Docker
// Compose would, with the default ports and with both moved, and checks
// what its header and the README say of it.
func TestComposeFileLoadsAndHoldsItsPromises(t *testing.T) {
	raw, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatalf("compose.yaml at the repository's root: %v", err)
	}
	for _, tc := range []struct {
		name               string
		env                map[string]string
		gateway, toxiproxy string
	}{
		{"default ports", map[string]string{}, "8080", "8474"},
		{"FOODDELIVERY_PORT=9090 TOXIPROXY_PORT=8475", map[string]string{"FOODDELIVERY_PORT": "9090", "TOXIPROXY_PORT": "8475"}, "9090", "8475"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := load(t, raw, tc.env)
			if err != nil {
				t.Fatalf("compose-go does not load compose.yaml: %v", err)
			}
			for _, problem := range promises(p, tc.gateway, tc.toxiproxy) {
				t.Error(problem)
			}
		})
	}
}

// promises returns what in p breaks a promise of compose.yaml's header
// and the README, with gateway and toxiproxy the published ports the
// environment asked for.
func promises(p *types.Project, gateway, toxiproxy string) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	names := p.ServiceNames()
	sort.Strings(names)
	if !slices.Equal(names, services) {
		return []string{fmt.Sprintf("compose.yaml runs the services %v, want one container each for %v", names, services)}
	}

	// The address each service listens on, by name, to check
	// every -peer and -link against.
	listen := map[string]string{}
	for _, name := range services {
		s := p.Services[name]
		if addr := flags(s.Command, "-addr"); len(addr) == 1 {
			listen[name] = port(addr[0])
		}
	}
	if listen["gateway"] != gateway {
		bad("the gateway listens on port %q, want %s (FOODDELIVERY_PORT)", listen["gateway"], gateway)
	}

	// Toxiproxy's listeners, by link name (gateway-order, ...).
	links := map[string]string{}
	for _, l := range flags(p.Services["toxiproxy"].Command, "-link") {
		name, addr, ok := strings.Cut(l, "=")
		if !ok {
			bad("toxiproxy's -link %q is not name=address", l)
			continue
		}
		links[name] = port(addr)
	}

	for _, name := range services {
		s := p.Services[name]
		if s.Build == nil || filepath.Base(s.Build.Context) != "deploy" {
			bad("%s: not built from deploy/ (its build: %+v), so its image would have to be pulled", name, s.Build)
		}
		if s.Image != "fooddelivery:local" {
			bad("%s: image %q, want fooddelivery:local, the one image every service shares", name, s.Image)
		}
		if s.Restart != "on-failure" {
			bad("%s: restart %q, want on-failure, so that a crash fault is followed by a restart", name, s.Restart)
		}
		cmd := []string(s.Command)
		if got := flags(cmd, "-service"); len(got) != 1 || got[0] != name {
			bad("%s: its command runs -service %v, want %s", name, got, name)
		}
		if !slices.Contains(cmd, "-container") {
			bad("%s: its command lacks -container, so it would refuse the compose network's addresses", name)
		}

		// Every peer is dialled at the port it listens on.
		for _, peer := range flags(cmd, "-peer") {
			pn, addr, _ := strings.Cut(peer, "=")
			if host, _, _ := strings.Cut(addr, ":"); host != pn {
				bad("%s: -peer %s names the host %q, want the service's own name", name, peer, host)
			}
			if want, ok := listen[pn]; !ok || port(addr) != want {
				bad("%s: -peer %s, but %s listens on port %q", name, peer, pn, want)
			}
		}
		// Every -via is a Toxiproxy listener named for the link.
		for _, via := range flags(cmd, "-via") {
			callee, addr, _ := strings.Cut(via, "=")
			link := name + "-" + callee
			if !strings.HasPrefix(addr, "toxiproxy:") {
				bad("%s: -via %s does not go through the toxiproxy container", name, via)
			} else if got, ok := links[link]; !ok || got != port(addr) {
				bad("%s: -via %s, but toxiproxy's link %s listens on port %q", name, via, link, got)
			}
		}

		// Only the gateway and Toxiproxy's API are published, on
		// 127.0.0.1 and the same number inside and out.
		want := map[string]string{"gateway": gateway, "toxiproxy": toxiproxy}[name]
		switch {
		case want == "" && len(s.Ports) > 0:
			bad("%s publishes %+v: only the gateway and Toxiproxy's API are published", name, s.Ports)
		case want != "" && len(s.Ports) != 1:
			bad("%s publishes %d ports, want 1", name, len(s.Ports))
		case want != "":
			pc := s.Ports[0]
			if pc.HostIP != "127.0.0.1" || pc.Published != want || pc.Target != uint32(atoi(want)) {
				bad("%s publishes %s:%s -> %d, want 127.0.0.1:%s -> %s (the admin guard accepts its own port only)", name, pc.HostIP, pc.Published, pc.Target, want, want)
			}
		}
		if name == "toxiproxy" {
			if got := flags(cmd, "-toxiproxy"); len(got) != 1 || port(got[0]) != toxiproxy {
				bad("toxiproxy's API listens on %v, want port %s (TOXIPROXY_PORT)", got, toxiproxy)
			}
		}

		// The durable services keep their files on a volume.
		durable := name == "order" || name == "payment"
		data := flags(cmd, "-data")
		switch {
		case durable && (len(data) != 1 || len(s.Volumes) != 1 || s.Volumes[0].Type != types.VolumeTypeVolume || s.Volumes[0].Target != data[0]):
			bad("%s: -data %v with volumes %+v, want one named volume mounted on its -data folder, so that a kill loses nothing", name, data, s.Volumes)
		case !durable && (len(data) > 0 || len(s.Volumes) > 0):
			bad("%s: -data %v with volumes %+v: only the order service and payment keep state", name, data, s.Volumes)
		}
	}
	for _, v := range []string{"order-data", "payment-data"} {
		if _, ok := p.Volumes[v]; !ok {
			bad("compose.yaml declares the volumes %v, want %s among them", keys(p.Volumes), v)
		}
	}
	return problems
}

// TestComposeFileKeepsToWhatBothComposeToolsRead checks that the file's
// top-level keys are among those Debian's docker-compose 1.29 and Compose
// v2 both read: no name, include, configs or secrets.
func TestComposeFileKeepsToWhatBothComposeToolsRead(t *testing.T) {
	raw, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || line[0] == ' ' || line[0] == '#' || line[0] == '\t' {
			continue
		}
		key, _, _ := strings.Cut(line, ":")
		if !slices.Contains([]string{"services", "volumes", "networks"}, key) && !strings.HasPrefix(key, "x-") {
			t.Errorf("compose.yaml has the top-level key %q, which docker-compose 1.29 does not read: keep to services, volumes, networks and x- extensions", key)
		}
	}
}

// TestComposeSchemaErrorsAreCaught feeds the loader mistakes a person
// editing compose.yaml could make, so that the check above is known to
// fail on a file Docker Compose would refuse.
func TestComposeSchemaErrorsAreCaught(t *testing.T) {
	raw, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"a mistyped key", "    ports:\n", "    portz:\n"},
		{"a port that is no number", `"127.0.0.1:${TOXIPROXY_PORT:-8474}:${TOXIPROXY_PORT:-8474}"`, `"127.0.0.1:${TOXIPROXY_PORT:-8474}:port"`},
		{"an undeclared volume", "      - payment-data:/data", "      - payment-dat:/data"},
		{"a build that is a list", "  build: deploy\n", "  build: [deploy]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(raw), tc.from) {
				t.Fatalf("compose.yaml no longer holds %q: change this case to a line it has", tc.from)
			}
			bad := strings.Replace(string(raw), tc.from, tc.to, 1)
			if _, err := load(t, []byte(bad), map[string]string{}); err == nil {
				t.Errorf("compose-go loads compose.yaml with %s (%q for %q) without an error", tc.name, tc.to, tc.from)
			} else {
				t.Logf("refused as it should be: %v", err)
			}
		})
	}
}

// atoi reads a port number, or -1 for what is not one.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestBrokenPromisesAreNamed loads compose.yaml changed in ways the
// schema accepts but the promises do not, and checks that each is named.
func TestBrokenPromisesAreNamed(t *testing.T) {
	raw, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"the gateway published on every interface", `"127.0.0.1:${FOODDELIVERY_PORT:-8080}:`, `"0.0.0.0:${FOODDELIVERY_PORT:-8080}:`, "gateway publishes 0.0.0.0"},
		{"a -via to a listener toxiproxy lacks", `"order=toxiproxy:9202"`, `"order=toxiproxy:9299"`, "toxiproxy's link gateway-order listens on port"},
		{"a peer dialled at the wrong port", `"-peer", "payment=payment:9103", "-peer", "courier`, `"-peer", "payment=payment:9113", "-peer", "courier`, "-peer payment=payment:9113"},
		{"payment without its volume", "    volumes:\n      - payment-data:/data\n", "", "payment: -data [/data] with volumes []"},
		{"an image pulled from a registry", "  image: fooddelivery:local\n", "  image: docker.io/library/fooddelivery:latest\n", "want fooddelivery:local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(raw), tc.from) {
				t.Fatalf("compose.yaml no longer holds %q: change this case to a line it has", tc.from)
			}
			p, err := load(t, []byte(strings.Replace(string(raw), tc.from, tc.to, 1)), map[string]string{})
			if err != nil {
				t.Fatalf("compose-go refuses the change, so the promise check is not what catches it: %v", err)
			}
			problems := promises(p, "8080", "8474")
			if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Errorf("with %s, the promises report %q, want a problem naming %q", tc.name, problems, tc.want)
			}
		})
	}
}

// uncommentJaeger returns raw with its indented comment lines ("  # ...")
// uncommented, as the header tells a person with Jaeger's image to do.
func uncommentJaeger(raw string) (string, int) {
	lines := strings.Split(raw, "\n")
	n := 0
	for i, l := range lines {
		body := strings.TrimLeft(l, " ")
		indent := len(l) - len(body)
		if indent == 0 || !strings.HasPrefix(body, "#") {
			continue
		}
		lines[i] = l[:indent] + strings.TrimPrefix(strings.TrimPrefix(body, "#"), " ")
		n++
	}
	return strings.Join(lines, "\n"), n
}

// TestJaegerLinesLoadWhenUncommented uncomments the Jaeger lines, as the
// header says, and checks what they give: a jaeger service on 127.0.0.1
// (16686, its UI; 4318, OTLP/HTTP), every service of the system started
// by the image's own binary with -otlp http://jaeger:4318, and the
// promises above still kept by the system's services.
func TestJaegerLinesLoadWhenUncommented(t *testing.T) {
	raw, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	text, n := uncommentJaeger(string(raw))
	if n == 0 {
		t.Fatalf("compose.yaml has no indented comment lines to uncomment, but its header says how to uncomment Jaeger's")
	}
	p, err := load(t, []byte(text), map[string]string{})
	if err != nil {
		t.Fatalf("compose.yaml with its %d Jaeger lines uncommented does not load: %v", n, err)
	}
	j, ok := p.Services["jaeger"]
	if !ok {
		t.Fatalf("with its %d comment lines uncommented, compose.yaml runs %v, want a jaeger service among them", n, p.ServiceNames())
	}
	if !strings.HasPrefix(j.Image, "jaegertracing/jaeger:") {
		t.Errorf("jaeger's image is %q, want jaegertracing/jaeger (the all-in-one)", j.Image)
	}
	published := map[string]string{}
	for _, pc := range j.Ports {
		published[pc.Published] = fmt.Sprintf("%s:%s->%d", pc.HostIP, pc.Published, pc.Target)
	}
	for _, port := range []string{"16686", "4318"} {
		if got, want := published[port], "127.0.0.1:"+port+"->"+port; got != want {
			t.Errorf("jaeger publishes %v; want %s among them (on loopback only)", published, want)
		}
	}
	if len(j.Ports) != 2 {
		t.Errorf("jaeger publishes %d ports, want 2 (16686 and 4318)", len(j.Ports))
	}
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/fooddelivery", "-otlp", "http://jaeger:4318"}
	if !strings.Contains(string(dockerfile), `ENTRYPOINT ["`+want[0]+`"]`) {
		t.Errorf("deploy/Dockerfile's ENTRYPOINT is not [%q], which the uncommented entrypoint repeats", want[0])
	}
	for _, name := range services {
		if got := []string(p.Services[name].Entrypoint); !slices.Equal(got, want) {
			t.Errorf("%s: uncommented, its entrypoint is %q, want %q", name, got, want)
		}
	}
	delete(p.Services, "jaeger")
	for _, problem := range promises(p, "8080", "8474") {
		t.Errorf("with the Jaeger lines uncommented: %s", problem)
	}
}
