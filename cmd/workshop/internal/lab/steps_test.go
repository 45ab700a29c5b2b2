package lab

import (
	"slices"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/gotest"
)

func TestParseTestJSON(t *testing.T) {
	run := gotest.Parse(strings.NewReader(testStream))

	a := run.Packages["example.com/j/a"]
	if a == nil || !a.BuildFailed || a.Action != "fail" {
		t.Fatalf("package a: got %+v, want a build failure", a)
	}
	if want := []string{"# example.com/j/a [example.com/j/a.test]", "a/a.go:2:23: undefined: x"}; !slices.Equal(a.BuildOutput, want) {
		t.Errorf("build output: got %q, want %q", a.BuildOutput, want)
	}

	b := run.Packages["example.com/j/b"]
	if b == nil || b.BuildFailed || b.Action != "fail" {
		t.Fatalf("package b: got %+v, want a failed run that built", b)
	}
	x := b.Tests["TestStep1X"]
	if x == nil || x.Action != "fail" {
		t.Fatalf("TestStep1X: got %+v, want fail (subtests folded in)", x)
	}
	if got, want := x.FailureLines(), []string{"    b_test.go:3: payment hung for 30s; read step 1"}; !slices.Equal(got, want) {
		t.Errorf("failure lines: got %q, want %q", got, want)
	}
	if _, ok := b.Tests["TestStep1X/sub"]; ok {
		t.Error("subtest kept as a test of its own; want it folded into TestStep1X")
	}
	if got := b.Tests["TestStep3Panic"].Action; got != "" {
		t.Errorf("TestStep3Panic action: got %q, want \"\" (never finished)", got)
	}
	if !slices.Equal(run.Other, []string{"not json at all"}) {
		t.Errorf("other output: got %q", run.Other)
	}

	tests := []string{"TestStep1X", "TestStep1Y", "TestStep2Z", "TestStep3Panic", "TestStep4Later", "TestHelperThing"}
	steps := StepResults(b, tests, []int{5})
	want := []StepState{StepFailing, StepPassed, StepNotRun, StepNotRun, StepNoTests}
	if len(steps) != len(want) {
		t.Fatalf("got %d steps, want %d: %+v", len(steps), len(want), steps)
	}
	for i, s := range steps {
		if s.N != i+1 || s.State != want[i] {
			t.Errorf("step %d: got step %d %v, want %v", i+1, s.N, s.State, want[i])
		}
	}
	if steps[0].Failed[0].Name != "TestStep1X" {
		t.Errorf("step 1's first failing test: got %s, want TestStep1X", steps[0].Failed[0].Name)
	}

	// Steps of a package that did not build are all failing to run.
	for _, s := range StepResults(a, []string{"TestStep1A"}, nil) {
		if s.State != StepNotRun {
			t.Errorf("step %d of a package that did not build: got %v, want not run", s.N, s.State)
		}
	}
}

func TestStepOf(t *testing.T) {
	cases := map[string]int{
		"TestStep1Hang":         1,
		"TestStep12Experiment":  12,
		"TestStep1":             1,
		"TestStep1hang":         0,
		"TestStepOne":           0,
		"TestOther":             0,
		"TestStep3Experiment/x": 0,
	}
	for name, want := range cases {
		if got := StepOf(name); got != want {
			t.Errorf("stepOf(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestParseTestJSONKeepsAFailureOfAnyRun(t *testing.T) {
	// go test -count=2: the first run fails, the second passes.
	const stream = `{"Action":"run","Package":"example.com/j/b","Test":"TestStep1X"}
{"Action":"output","Package":"example.com/j/b","Test":"TestStep1X","Output":"    b_test.go:3: flaky: read step 1\n"}
{"Action":"fail","Package":"example.com/j/b","Test":"TestStep1X","Elapsed":0}
{"Action":"run","Package":"example.com/j/b","Test":"TestStep1X"}
{"Action":"pass","Package":"example.com/j/b","Test":"TestStep1X","Elapsed":0}
{"Action":"fail","Package":"example.com/j/b","Elapsed":0.007}
`
	run := gotest.Parse(strings.NewReader(stream))
	x := run.Packages["example.com/j/b"].Tests["TestStep1X"]
	if x == nil || x.Action != "fail" {
		t.Fatalf("TestStep1X: got %+v, want fail: a later passing run must not hide a failure", x)
	}
	if got := StepResults(run.Packages["example.com/j/b"], []string{"TestStep1X"}, nil)[0].State; got != StepFailing {
		t.Errorf("step 1: got %v, want failing", got)
	}
}

// A go test -json stream with one package that does not build and one
// whose tests fail, pass, crash the binary and never run.
const testStream = `{"ImportPath":"example.com/j/a [example.com/j/a.test]","Action":"build-output","Output":"# example.com/j/a [example.com/j/a.test]\n"}
{"ImportPath":"example.com/j/a [example.com/j/a.test]","Action":"build-output","Output":"a/a.go:2:23: undefined: x\n"}
{"ImportPath":"example.com/j/a [example.com/j/a.test]","Action":"build-fail"}
{"Action":"start","Package":"example.com/j/a"}
{"Action":"output","Package":"example.com/j/a","Output":"FAIL\texample.com/j/a [build failed]\n"}
{"Action":"fail","Package":"example.com/j/a","Elapsed":0,"FailedBuild":"example.com/j/a [example.com/j/a.test]"}
{"Action":"start","Package":"example.com/j/b"}
{"Action":"run","Package":"example.com/j/b","Test":"TestStep1X"}
{"Action":"output","Package":"example.com/j/b","Test":"TestStep1X","Output":"=== RUN   TestStep1X\n"}
{"Action":"run","Package":"example.com/j/b","Test":"TestStep1X/sub"}
{"Action":"output","Package":"example.com/j/b","Test":"TestStep1X/sub","Output":"=== RUN   TestStep1X/sub\n"}
{"Action":"output","Package":"example.com/j/b","Test":"TestStep1X/sub","Output":"    b_test.go:3: payment hung for 30s; read step 1\n"}
{"Action":"output","Package":"example.com/j/b","Test":"TestStep1X/sub","Output":"--- FAIL: TestStep1X/sub (0.00s)\n"}
{"Action":"fail","Package":"example.com/j/b","Test":"TestStep1X/sub","Elapsed":0}
{"Action":"output","Package":"example.com/j/b","Test":"TestStep1X","Output":"--- FAIL: TestStep1X (0.00s)\n"}
{"Action":"fail","Package":"example.com/j/b","Test":"TestStep1X","Elapsed":0}
{"Action":"run","Package":"example.com/j/b","Test":"TestStep1Y"}
{"Action":"pass","Package":"example.com/j/b","Test":"TestStep1Y","Elapsed":0}
{"Action":"run","Package":"example.com/j/b","Test":"TestStep2Z"}
{"Action":"output","Package":"example.com/j/b","Test":"TestStep2Z","Output":"--- PASS: TestStep2Z (0.00s)\n"}
{"Action":"pass","Package":"example.com/j/b","Test":"TestStep2Z","Elapsed":0}
{"Action":"run","Package":"example.com/j/b","Test":"TestStep3Panic"}
{"Action":"output","Package":"example.com/j/b","Test":"TestStep3Panic","Output":"panic: boom\n"}
{"Action":"output","Package":"example.com/j/b","Output":"FAIL\texample.com/j/b\t0.006s\n"}
{"Action":"fail","Package":"example.com/j/b","Elapsed":0.007}
not json at all
`
