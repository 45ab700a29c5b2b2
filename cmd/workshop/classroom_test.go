package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/class"
	"github.com/gophereats/resilience/cmd/workshop/internal/labrun"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// The Classroom workflow grades every step of every lab with the command
// status -json gives as the step's test_code: it is written from the
// labs' tests, and a lab step added or renamed without writing it again
// fails here (-update writes it).
func TestClassroomWorkflowGradesEveryStep(t *testing.T) {
	ws, err := repo.Open("../..", io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, infos, err := labrun.Present(ws)
	if err != nil {
		t.Fatal(err)
	}
	want := class.Workflow(infos)
	file := ws.Abs(class.WorkflowPath)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (%s writes it)", err, class.WorkflowUpdate)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the labs' tests make of it: %s writes it again", class.WorkflowPath, class.WorkflowUpdate)
	}
	graders := strings.Count(string(got), "uses: classroom-resources/autograding-command-grader@v1")
	steps := 0
	for _, info := range infos {
		steps += len(info.Steps)
	}
	if graders != steps || steps < 60 {
		t.Errorf("%s has %d graders for %d lab steps; want one per step", class.WorkflowPath, graders, steps)
	}
	for _, c := range []struct{ what, command string }{
		{"lab 01 step 2's tests, with -race as check runs them", "go test -race -v -run '^(TestStep2BlackHoledPaymentFailsAtConnect)$' ./labs/01-timeouts/ 2>&1 | "},
		{"lab 01's experiment, without -race: it measures", "go test -v -run '^(TestStep5Experiment)$' ./labs/01-timeouts/ 2>&1 | "},
		{"the game day's first stage, without -race: its learners edit a plan", "go test -v -run '^(TestStep1HealthyRush)$' ./labs/10-game-day/ 2>&1 | "},
	} {
		if !strings.Contains(string(got), "command: \""+c.command) {
			t.Errorf("%s lacks %s: %s", class.WorkflowPath, c.what, c.command)
		}
	}
}

// The dev container opens the workshop with a Go of 1.26 or newer, the Go
// extension, the gateway's port forwarded under a label, and doctor run
// once it is created.
func TestDevContainer(t *testing.T) {
	data, err := os.ReadFile("../../.devcontainer/devcontainer.json")
	if err != nil {
		t.Fatal(err)
	}
	var dc struct {
		Name           string
		Image          string
		Customizations struct {
			VSCode struct{ Extensions []string } `json:"vscode"`
		}
		HostRequirements struct {
			CPUs            int
			Memory, Storage string
		}
		ForwardPorts    []int
		PortsAttributes map[string]struct{ Label, OnAutoForward string }
		RemoteEnv       map[string]string
		// UpdateContentCommand runs when the container is created and
		// again in a prebuild, which postCreateCommand does not.
		UpdateContentCommand string
		WaitFor              string
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&dc); err != nil {
		t.Fatalf(".devcontainer/devcontainer.json does not parse as the JSON this test knows (plain JSON, no comments): %v", err)
	}
	m := regexp.MustCompile(`^mcr\.microsoft\.com/devcontainers/go:\d+-1\.(\d+)-[a-z]+$`).FindStringSubmatch(dc.Image)
	if m == nil {
		t.Fatalf("image %q is not a tag of mcr.microsoft.com/devcontainers/go naming its Go (2-1.26-trixie)", dc.Image)
	}
	if minor, _ := strconv.Atoi(m[1]); minor < 26 {
		t.Errorf("image %q has Go 1.%d; the workshop needs 1.26 or newer", dc.Image, minor)
	}
	if !slices.Contains(dc.Customizations.VSCode.Extensions, "golang.go") {
		t.Errorf("extensions %q lack golang.go, the Go extension", dc.Customizations.VSCode.Extensions)
	}
	if !slices.Contains(dc.ForwardPorts, 8080) || dc.PortsAttributes["8080"].Label == "" {
		t.Errorf("port 8080 (the gateway and its dashboard) should be forwarded with a label: forwardPorts %v, attributes %v", dc.ForwardPorts, dc.PortsAttributes)
	}
	if !strings.Contains(dc.UpdateContentCommand, "go mod download") || !strings.HasSuffix(dc.UpdateContentCommand, "go run ./cmd/workshop doctor") ||
		dc.WaitFor != "updateContentCommand" {
		t.Errorf("updateContentCommand %q (waitFor %q) should download the modules and end with go run ./cmd/workshop doctor, and be waited for: "+
			"a prebuild runs it, so 25 people opening Codespaces at 9:00 do not all wait for the downloads", dc.UpdateContentCommand, dc.WaitFor)
	}
	if dc.HostRequirements.CPUs < 2 || dc.HostRequirements.Memory == "" {
		t.Errorf("hostRequirements %+v should ask for 2 cores at least and say the memory: verify and the race detector need them", dc.HostRequirements)
	}
	if got, want := dc.RemoteEnv["FOODDELIVERY_ALLOW_HOST"], "${containerEnv:CODESPACE_NAME}-8080.${containerEnv:GITHUB_CODESPACES_PORT_FORWARDING_DOMAIN}"; got != want {
		t.Errorf("remoteEnv FOODDELIVERY_ALLOW_HOST is %q, want %q: the Codespace's forwarded host of port 8080, which the dashboard must answer", got, want)
	}
}
