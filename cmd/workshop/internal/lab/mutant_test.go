package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mutantRef = "package x\n\nfunc A() int { return 1 }\n\nfunc B() int {\n\treturn 2\n}\n\nfunc C() int {\n\treturn 2\n}\n"

func TestParseMutant(t *testing.T) {
	good := "The budget is one second\ntoo long.\nCaught by step 4.\n" +
		"-- old x.go --\nfunc A() int { return 1 }\n-- new x.go --\nfunc A() int { return 2 }\n" +
		"-- old x.go --\nfunc B() int {\n\treturn 2\n}\n-- new x.go --\n"
	m, err := ParseMutant("off-by-one", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if m.Pitfall != "The budget is one second too long." || m.Step != 4 || len(m.Edits) != 2 {
		t.Fatalf("got %+v", m)
	}
	if m.Edits[1].New != "" || m.Edits[1].Line != 8 {
		t.Errorf("second edit: got %+v, want an empty new snippet and line 8", m.Edits[1])
	}
	race, err := ParseMutant("no-mutex", []byte("No mutex.\nCaught by step 4 under -race.\n-- old x.go --\na\n-- new x.go --\n"))
	if err != nil || !race.Race || race.Step != 4 || m.Race {
		t.Errorf("under -race: got %+v, %v; want step 4 with Race set (and the first mutant without)", race, err)
	}
	// CRLF reads the same as LF.
	crlf, err := ParseMutant("off-by-one", []byte(strings.ReplaceAll(good, "\n", "\r\n")))
	if err != nil || crlf.Pitfall != m.Pitfall || crlf.Edits[0] != m.Edits[0] {
		t.Errorf("CRLF: got %+v, %v", crlf, err)
	}

	bad := map[string]string{
		"no step":          "Wrong.\n-- old x.go --\na\n-- new x.go --\nb\n",
		"no pitfall":       "Caught by step 1.\n-- old x.go --\na\n-- new x.go --\nb\n",
		"step zero":        "Wrong.\nCaught by step 0.\n-- old x.go --\na\n-- new x.go --\nb\n",
		"no edits":         "Wrong.\nCaught by step 1.\n",
		"new without old":  "Wrong.\nCaught by step 1.\n-- new x.go --\nb\n",
		"old without new":  "Wrong.\nCaught by step 1.\n-- old x.go --\na\n",
		"files differ":     "Wrong.\nCaught by step 1.\n-- old x.go --\na\n-- new y.go --\nb\n",
		"empty old":        "Wrong.\nCaught by step 1.\n-- old x.go --\n\n-- new x.go --\nb\n",
		"no change":        "Wrong.\nCaught by step 1.\n-- old x.go --\na\n-- new x.go --\na\n",
		"mistyped marker":  "Wrong.\nCaught by step 1.\n-- old x.go\na\n-- new x.go --\nb\n",
		"unknown section":  "Wrong.\nCaught by step 1.\n-- mid x.go --\na\n",
		"step not at last": "Caught by step 1.\nWrong.\n-- old x.go --\na\n-- new x.go --\nb\n",
	}
	for name, src := range bad {
		if _, err := ParseMutant("m", []byte(src)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestMutantApply(t *testing.T) {
	refs := map[string][]byte{"x.go": []byte(strings.ReplaceAll(mutantRef, "\n", "\r\n"))}
	apply := func(src string) (string, []string) {
		t.Helper()
		m, err := ParseMutant("m", []byte("Wrong.\nCaught by step 1.\n"+src))
		if err != nil {
			t.Fatal(err)
		}
		out, problems := m.Apply("solutions/01-x/mutants/m.txtar", refs)
		return string(out["x.go"]), problems
	}

	got, problems := apply("-- old x.go --\nfunc B() int {\n\treturn 2\n-- new x.go --\nfunc B() int {\n\treturn 3\n" +
		"-- old x.go --\nfunc A() int { return 1 }\n-- new x.go --\n")
	want := "package x\n\n\nfunc B() int {\n\treturn 3\n}\n\nfunc C() int {\n\treturn 2\n}\n"
	if problems != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, problems, want)
	}

	for name, c := range map[string]struct{ src, want string }{
		"twice":        {"-- old x.go --\n\treturn 2\n-- new x.go --\n\treturn 3\n", `m.txtar:3: the old snippet occurs 2 times in x.go (lines 6, 10), want exactly once: add a neighbouring line`},
		"missing":      {"-- old x.go --\nfunc D() {}\n-- new x.go --\n", `its line 1, "func D() {}", is not a whole line of x.go (snippets are whole lines`},
		"mid-line":     {"-- old x.go --\nint { return 1 }\n-- new x.go --\n", `its line 1, "int { return 1 }", is not a whole line`},
		"spaces":       {"-- old x.go --\nfunc B() int {\n    return 2\n}\n-- new x.go --\n", `its line 2, "    return 2", is not a whole line of x.go; x.go:6, "\treturn 2", differs only in spaces or tabs`},
		"trailing":     {"-- old x.go --\nfunc A() int { return 1 } \n-- new x.go --\n", `x.go:3, "func A() int { return 1 }", differs only in spaces or tabs`},
		"out of order": {"-- old x.go --\n\treturn 2\nfunc B() int {\n-- new x.go --\n", "each of its lines does, but not one after the other"},
		"overlap":      {"-- old x.go --\nfunc B() int {\n\treturn 2\n-- new x.go --\n-- old x.go --\n\treturn 2\n}\n\nfunc C() int {\n-- new x.go --\n", "overlaps"},
		"other file":   {"-- old y.go --\na\n-- new y.go --\nb\n", "edits y.go, which is not one of the lab's editable files"},
		"after a fix":  {"-- old x.go --\nfunc A() int { return 9 }\n-- new x.go --\n", "has the reference changed?"},
	} {
		_, problems := apply(c.src)
		if len(problems) != 1 || !strings.Contains(problems[0], c.want) {
			t.Errorf("%s: got %q, want one problem containing %q", name, problems, c.want)
		}
	}
}

func TestChangesNothing(t *testing.T) {
	dir := t.TempDir()
	ref := []byte("package x\n\n// A returns one.\nfunc A() int { return 1 }\n")
	for src, want := range map[string]bool{
		"package x\n\n// A returns two.\nfunc A() int {\n\treturn 1\n}\n": true,
		"package x\n\n// A returns one.\nfunc A() int { return 2 }\n":     false,
	} {
		p := filepath.Join(dir, "x.go")
		os.WriteFile(p, []byte(src), 0o644)
		got := ChangesNothing(map[string]string{"x.go": p}, map[string][]byte{"x.go": ref})
		if got != want {
			t.Errorf("changesNothing(%q) = %v, want %v", src, got, want)
		}
	}
}
