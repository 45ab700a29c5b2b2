package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// With an empty module cache and the module proxy off, doctor fails on
// the workshop's own repository, naming the modules that are missing and
// the command that fetches them, and does not try to build.
func TestDoctorNamesMissingModulesAndTheFix(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-modcacherw")
	var out bytes.Buffer
	err := run(context.Background(), []string{"workshop", "-C", "../..", "doctor"}, &out, &out)
	if !errors.Is(err, repo.ErrFailed) {
		t.Fatalf("doctor with an empty module cache returned %v, want a failure:\n%s", err, out.String())
	}
	for _, want := range []string{
		"  ok    Go: go1.",
		"  FAIL  modules: ",
		"github.com/go-chi/chi/v5 v5.",
		"        fix: go mod download (while you have a network connection), then run doctor again",
		"  skip  build: not tried",
		"Not ready: 1 problem above.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor's output lacks %q:\n%s", want, out.String())
		}
	}
	var missing, all int
	if _, err := fmt.Sscanf(out.String()[strings.Index(out.String(), "FAIL  modules: ")+len("FAIL  modules: "):], "%d of the %d modules", &missing, &all); err != nil ||
		missing != all || all < 8 || !strings.Contains(out.String(), fmt.Sprintf(" and %d more\n", all-6)) {
		t.Errorf("doctor should count every module of go.mod as missing (%d of %d), six by name and the rest as a number:\n%s", missing, all, out.String())
	}
	if strings.Contains(out.String(), "building and running") {
		t.Errorf("doctor built the labs though their modules are missing:\n%s", out.String())
	}
}

// On a module whose modules are all there (the fixture needs none),
// doctor builds and runs every lab once and says the machine is ready; a
// taken port is a warning, with the fix, not a failure.
func TestDoctorBuildsEveryLabAndWarnsOfATakenPort(t *testing.T) {
	root := newFixtureRepo(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"workshop", "-C", root, "doctor", "-addr", l.Addr().String()}, &out, &out); err != nil {
		t.Fatalf("doctor on the fixture: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"  ok    modules: go.mod requires no other module: the labs, the tool and the system build offline",
		"        lab 01 timeouts: built, 0 of 2 steps pass",
		"  ok    build: every lab's tests, the system and the tool build (",
		"  warn  port: the gateway's address " + l.Addr().String() + " is taken",
		"        fix: stop what listens there, or start the system with -addr 127.0.0.1:9090",
		"Ready, with ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor's output lacks %q:\n%s", want, out.String())
		}
	}

	// What doctor ran is in status's cache: status shows every lab at once.
	out.Reset()
	if err := run(context.Background(), []string{"workshop", "-C", root}, &out, &out); err != nil {
		t.Fatalf("status after doctor: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "unchanged since the last run") {
		t.Errorf("status after doctor ran the labs again instead of answering from its cache:\n%s", out.String())
	}
}

// What the go command's environment says can break every build is a
// failure with its own fix, not a missing module or a broken lab.
func TestDoctorNamesTheEnvironmentThatBreaksBuilds(t *testing.T) {
	root := newFixtureRepo(t)
	for _, c := range []struct{ env, value, want, fix string }{
		{"GOFLAGS", "-mod=vendor", "  FAIL  Go: GOFLAGS=-mod=vendor builds from a vendor directory", "go env -u GOFLAGS"},
		{"CC", "no-such-compiler", "  FAIL  C compiler: cgo is on (CGO_ENABLED=1) but its C compiler, CC=no-such-compiler, is not on PATH", "unset CC"},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			if c.env == "CC" {
				t.Setenv("CGO_ENABLED", "1")
			}
			var out bytes.Buffer
			err := run(context.Background(), []string{"workshop", "-C", root, "doctor"}, &out, &out)
			if !errors.Is(err, repo.ErrFailed) || !strings.Contains(out.String(), c.want) || !strings.Contains(out.String(), "fix: "+c.fix) ||
				!strings.Contains(out.String(), "  skip  build: not tried") {
				t.Errorf("doctor with %s=%s: got %v,\n%s\nwant a failure %q with the fix %q, and no build", c.env, c.value, err, out.String(), c.want, c.fix)
			}
		})
	}
}

func TestDoctorRefusesArguments(t *testing.T) {
	for _, args := range [][]string{{"doctor", "01"}, {"doctor", "-addr"}, {"doctor", "-x"}, {"doctor", "-addr", "notaport"}, {"doctor", "-addr", "0.0.0.0:8080"}} {
		err := run(context.Background(), append([]string{"workshop"}, args...), &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, repo.ErrUsage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}
