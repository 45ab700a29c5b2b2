package learner

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

func TestLiveArgsSplitLabsFromTheSystemsFlags(t *testing.T) {
	tests := []struct {
		args        []string
		labs, flags []string
	}{
		{nil, nil, nil},
		{[]string{"05"}, []string{"05"}, nil},
		{[]string{"05", "6", "-fault", "payment=hang"}, []string{"05", "6"}, []string{"-fault", "payment=hang"}},
		{[]string{"05", "--", "-h"}, []string{"05"}, []string{"-h"}},
		{[]string{"--", "-lab", "09=solution"}, []string{}, []string{"-lab", "09=solution"}},
		{[]string{"-fast"}, []string{}, []string{"-fast"}},
	}
	for _, tt := range tests {
		labs, flags := liveArgs(tt.args)
		if !slices.Equal(labs, tt.labs) || !slices.Equal(flags, tt.flags) {
			t.Errorf("liveArgs(%q) = %q, %q; want labs %q and flags %q", tt.args, labs, flags, tt.labs, tt.flags)
		}
	}
}

func TestBuildErrorsAreGroupedByLab(t *testing.T) {
	var out bytes.Buffer
	ws := &repo.Workspace{Stderr: &out}
	reportBuildErrors(ws, []string{
		"# github.com/gophereats/resilience/labs/05-breaker",
		"labs/05-breaker/breaker.go:12:2: undefined: x",
		"# github.com/gophereats/resilience/cmd/fooddelivery",
		"cmd/fooddelivery/learner06.go:14:20: undefined: bulkhead.Compartments",
		"cmd/fooddelivery/main.go:1:1: something else",
	})
	got := out.String()
	for _, want := range []string{
		"lab 05-breaker does not compile:\n    labs/05-breaker/breaker.go:12:2: undefined: x\n",
		"lab 06-bulkhead does not compile:\n    cmd/fooddelivery/learner06.go:14:20: undefined: bulkhead.Compartments\n",
		"keep the names and signatures the starter gave you",
		"go build of the system failed:\n    cmd/fooddelivery/main.go:1:1: something else\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q; it is:\n%s", want, got)
		}
	}
	if strings.Count(got, "keep the names") != 1 {
		t.Errorf("only lab 06's error is in its glue:\n%s", got)
	}
}
