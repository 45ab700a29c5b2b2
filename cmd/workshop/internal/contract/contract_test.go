package contract

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestContractDocument keeps CONTRIBUTING.md's numbered clauses and the
// checks verify runs the same list: a clause added, removed or renamed on
// one side only fails here.
func TestContractDocument(t *testing.T) {
	data, err := os.ReadFile("../../../../CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[int]string{}
	for _, m := range regexp.MustCompile(`(?m)^\*\*([0-9]+)\. (.+?)\.\*\*`).FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[1])
		if _, dup := doc[n]; dup {
			t.Errorf("CONTRIBUTING.md has clause %d twice", n)
		}
		doc[n] = m[2]
	}
	code := map[int]string{}
	for _, c := range append(append([]clause{}, contract...), otherClauses...) {
		if _, dup := code[c.n]; dup {
			t.Errorf("contract.go has clause %d twice", c.n)
		}
		code[c.n] = c.title
	}
	for n := 1; n <= max(len(doc), len(code)); n++ {
		switch d, c := doc[n], code[n]; {
		case d == "":
			t.Errorf("clause %d (%q) is checked by verify but not written in CONTRIBUTING.md", n, c)
		case c == "":
			t.Errorf("clause %d (%q) of CONTRIBUTING.md is not checked by verify", n, d)
		case !strings.EqualFold(d, c):
			t.Errorf("clause %d is %q in CONTRIBUTING.md, %q in contract.go", n, d, c)
		}
	}
	if len(doc) != len(code) {
		t.Errorf("CONTRIBUTING.md has %d clauses, verify checks %d", len(doc), len(code))
	}
}
