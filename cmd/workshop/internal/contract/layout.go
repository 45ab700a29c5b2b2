package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// The inspections of a lab's files that clauses 3, 5, 8 and 9 report.

// stepNameProblems checks clause 3's naming rules on the test source.
func stepNameProblems(src lab.TestSource) []string {
	problems := append([]string{}, src.ParseErrs...)
	steps := map[int][]string{}
	for _, t := range src.Tests {
		if lab.StepOf(t) == 0 {
			problems = append(problems, fmt.Sprintf("%s does not match ^TestStep[0-9]+[A-Z]", t))
			continue
		}
		steps[lab.StepOf(t)] = append(steps[lab.StepOf(t)], t)
	}
	if len(steps) == 0 {
		return append(problems, "no TestStep tests")
	}
	last := 0
	for n := range steps {
		last = max(last, n)
	}
	for n := 1; n <= last; n++ {
		if len(steps[n]) == 0 {
			problems = append(problems, fmt.Sprintf("step %d has no test (steps go 1..%d without gaps)", n, last))
		}
	}
	if !slices.Contains(steps[last], fmt.Sprintf("TestStep%dExperiment", last)) {
		problems = append(problems, fmt.Sprintf("the last step has no TestStep%dExperiment", last))
	}
	for n := 1; n < last; n++ {
		if exp := fmt.Sprintf("TestStep%dExperiment", n); slices.Contains(steps[n], exp) {
			problems = append(problems, fmt.Sprintf("%s is not in the last step (%d)", exp, last))
		}
	}
	return problems
}

// importProblems lists imports of other labs or of solutions (clause 8).
func importProblems(ctx context.Context, ws *repo.Workspace, l lab.Lab, overlay string) []string {
	args := append([]string{"list", "-e", "-json"}, overlayArgs(overlay)...)
	res := ws.GoCmd(ctx, 2*time.Minute, append(args, l.Pattern())...)
	if res.Err != nil {
		return append([]string{"go list failed"}, res.Combined()...)
	}
	var pkg struct {
		ImportPath                               string
		Imports, TestImports, XTestImports, Deps []string
	}
	if err := json.Unmarshal(res.Stdout, &pkg); err != nil {
		return []string{"go list: " + err.Error()}
	}
	labs, sols := ws.Module+"/labs/", ws.Module+"/solutions"
	// The capstone's exception to clause 8: a lab whose tests play the game
	// day (import internal/gameday) composes the other labs' reference
	// solutions, its building blocks, and shows its own reference on the
	// score card; it still imports no other lab.
	capstone := slices.Contains(pkg.TestImports, ws.Module+lab.GameDayPackage)
	var problems []string
	seen := map[string]bool{}
	for _, list := range [][]string{pkg.Imports, pkg.TestImports, pkg.XTestImports, pkg.Deps} {
		for _, imp := range list {
			bad := (strings.HasPrefix(imp, labs) && imp != pkg.ImportPath) || (!capstone && (imp == sols || strings.HasPrefix(imp, sols+"/")))
			if bad && !seen[imp] {
				seen[imp] = true
				problems = append(problems, "imports "+imp)
			}
		}
	}
	return problems
}

// readmeProblems checks the README's sections and step headings.
func readmeProblems(ws *repo.Workspace, info lab.Info) []string {
	if _, err := os.Stat(ws.Abs(path.Join(info.Dir(), "README.md"))); err != nil {
		return []string{info.Dir() + "/README.md is missing"}
	}
	var problems []string
	if missing := lab.MissingSections(info.Readme.Sections); len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("missing or out of order: ## %s (want, in order: %s; found: %s)",
			strings.Join(missing, ", ## "), strings.Join(lab.ReadmeSections, ", "), strings.Join(info.Readme.Sections, ", ")))
	}
	problems = append(problems, readmeWordProblems(info.Readme)...)
	if !info.Readme.ProductionLink {
		problems = append(problems, "README.md's ## In production section does not link to PRODUCTION.md (\"[PRODUCTION.md](PRODUCTION.md)\")")
	}
	if data, err := os.ReadFile(ws.Abs(path.Join(info.Dir(), "PRODUCTION.md"))); err != nil {
		problems = append(problems, info.Dir()+"/PRODUCTION.md is missing: what production libraries do, and further reading")
	} else if len(strings.Fields(string(data))) < 50 {
		problems = append(problems, info.Dir()+"/PRODUCTION.md is nearly empty: it holds what production libraries do, and further reading")
	}
	testSteps := map[int]bool{}
	for _, t := range info.Tests.Tests {
		if n := lab.StepOf(t); n > 0 {
			testSteps[n] = true
		}
	}
	for _, n := range info.Steps {
		_, inReadme := info.Readme.Steps[n]
		switch {
		case testSteps[n] && !inReadme:
			problems = append(problems, fmt.Sprintf("no \"### Step %d: title\" heading under ## Steps", n))
		case !testSteps[n] && inReadme:
			problems = append(problems, fmt.Sprintf("\"### Step %d\" has no TestStep%d test", n, n))
		}
	}
	return problems
}

// readmeWordProblems checks the README's length: at most readmeWordLimit
// words outside the link sections, which hold at most
// linkSectionWordLimit each. The problem names the longest sections, so
// the author knows where to cut.
func readmeWordProblems(r lab.Readme) []string {
	var problems []string
	total := 0
	type count struct {
		name  string
		words int
	}
	var counts []count
	for name, n := range r.Words {
		if strings.EqualFold(name, "Hints") || strings.EqualFold(name, "In production") {
			if n > lab.LinkSectionWordLimit {
				problems = append(problems, fmt.Sprintf("README.md's ## %s section has %d words, more than the %d of a sentence and a link: the text belongs in the file it links to",
					name, n, lab.LinkSectionWordLimit))
			}
			continue
		}
		total += n
		if name == "" {
			name = "(before the first section)"
		}
		counts = append(counts, count{name, n})
	}
	if total > lab.ReadmeWordLimit {
		slices.SortFunc(counts, func(a, b count) int { return b.words - a.words })
		var parts []string
		for _, c := range counts {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.words))
		}
		problems = append(problems, fmt.Sprintf("README.md has %d words, more than %d (code blocks and tables not counted; by section: %s): say each rule once, where its step needs it",
			total, lab.ReadmeWordLimit, strings.Join(parts, ", ")))
	}
	return problems
}

// hintsProblems checks the lab's HINTS.md (clause 9): it exists and
// parses, its steps are steps with tests, every hint has a body (the
// parser checks that), and the README's Hints section links to it.
func hintsProblems(ws *repo.Workspace, info lab.Info) []string {
	hints, problems, err := lab.ReadHints(ws, info.Lab)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%s/HINTS.md is missing", info.Dir())
		}
		problems = append(problems, err.Error())
	}
	testSteps := map[int]bool{}
	for _, t := range info.Tests.Tests {
		if n := lab.StepOf(t); n > 0 {
			testSteps[n] = true
		}
	}
	for _, s := range hints.Steps {
		if !testSteps[s.N] {
			problems = append(problems, fmt.Sprintf("%s/HINTS.md:%d: \"## Step %d\" has no TestStep%d test", info.Dir(), s.Line, s.N, s.N))
		}
	}
	problems = append(problems, hintChainProblems(info.Dir()+"/HINTS.md", hints)...)
	if !info.Readme.HintsLink {
		problems = append(problems, "README.md's ## Hints section does not link to HINTS.md (\"[HINTS.md](HINTS.md)\")")
	}
	return problems
}

// hintChainProblems checks that hints teach before they tell: every
// symptom has a chain of at least two hints (the same "### symptom"
// heading, gentlest first), and only the last hint of a chain shows code.
// name is the file's name in the problems.
func hintChainProblems(name string, f lab.HintFile) []string {
	var problems []string
	for _, s := range f.Steps {
		var order []string
		chains := map[string][]lab.Hint{}
		for _, h := range s.Hints {
			if _, seen := chains[h.Symptom]; !seen {
				order = append(order, h.Symptom)
			}
			chains[h.Symptom] = append(chains[h.Symptom], h)
		}
		for _, symptom := range order {
			chain := chains[symptom]
			if len(chain) < 2 {
				problems = append(problems, fmt.Sprintf("%s:%d: step %d's hint for %q is alone: give a symptom a chain of hints under the same heading, gentlest first (a question or the concept, then the API or the invariant, then the shape of the code)",
					name, chain[0].Line, s.N, symptom))
				continue
			}
			for i, h := range chain[:len(chain)-1] {
				if code := codeIn(h.Body); code != "" {
					problems = append(problems, fmt.Sprintf("%s:%d: hint %d of %d for %q shows code (%s): only the last hint of a chain shows code",
						name, h.Line, i+1, len(chain), symptom, code))
				}
			}
		}
	}
	return problems
}

var (
	inlineCode = regexp.MustCompile("`([^`]+)`")
	// statementLike matches inline code that is a statement (an
	// assignment, a send, a block, a keyword with what follows it:
	// `defer cancel()`, `case <-ctx.Done():`, `n=n+1`) or a compound
	// expression (`a < b && c`, `4<<10`, `&http.Client{Timeout: d}`), as
	// opposed to what a hint may name before it shows code: a name
	// (`ctx.Err`, `Retryable`), a type (`map[string]struct{}`), a keyword
	// or an operator alone (`select`, `>=`, `&&`), a single comparison
	// (`err == nil`) or some arithmetic (`1 + headroom`, an invariant), a
	// receive (`<-ctx.Done()`), a call (`Draw(seed, key, i)`; so a call
	// alone, `http.Error(w, "busy", 503)`, passes too), a setting
	// (`GOFLAGS=-race`), a header value, or a route or URL
	// (`GET /orders/{id}?limit=10`).
	statementLike = regexp.MustCompile(`:=|\s=\s|[\w\])]=[^=\s]|[+\-*/%|&^]=[^=]|\+\+|\w--(\s|$)|\{\s|\s\}|\w\{\w+:|&&|\|\||<<|>>|[\w)\]]\s*<-\s*\S|\b(return|if|for|select|defer|switch|go|var|case)\s+\S`)
	// route matches an HTTP route or a URL, whose query may hold "=".
	// A header line (`Content-Type: text/plain; charset=utf-8`) is no code
	// either.
	route = regexp.MustCompile(`^((GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)\s+)?(/|https?://)\S*$|^[A-Z][A-Za-z0-9-]*: `)
	// operatorAlone matches inline code that is one operator.
	operatorAlone = regexp.MustCompile(`^\s*(&&|\|\||:=|=|==|!=|<=|>=|<-|\+\+|--|<<|>>|&\^|[+\-*/%|&^]=)\s*$`)
	// htmlCode matches inline code written as HTML.
	htmlCode = regexp.MustCompile(`(?s)<(?:code|tt|samp)>(.+?)</(?:code|tt|samp)>`)
	// htmlPre matches the start of a preformatted HTML block.
	htmlPre = regexp.MustCompile(`(?i)<pre[\s>]`)
	// command matches a shell command: settings, then a go command or
	// a cd; commands joined by && are checked one by one.
	command = regexp.MustCompile(`^\s*(([A-Z_][A-Z0-9_]*=\S*\s+)*go (test|run|doc|vet|build|tool|mod|env|version|list|get|install|work|generate|fmt|clean)\b.*|cd \S+|[A-Z_][A-Z0-9_]*=\S*)\s*$`)
	// blockMarkers matches what may begin a line before a fence inside a
	// blockquote or a list item.
	blockMarkers = regexp.MustCompile(`^\s*((>\s?)+|([-*+]|[0-9]+[.)])\s+)+`)
)

// isCommand reports whether inline code is a shell command (or several
// joined by &&), which is not Go code.
func isCommand(span string) bool {
	for _, part := range strings.Split(span, "&&") {
		if !command.MatchString(part) {
			return false
		}
	}
	return true
}

// codeIn returns the first code a hint's body shows, shortened, or "" if
// it shows none: a code block (fenced, anywhere: in a list or a quote
// too; indented; or <pre>), or inline code (`...` or <code>...</code>)
// that reads as a statement. Inline commands (`go test ...`) are not code.
func codeIn(body string) string {
	lines := strings.Split(body, "\n")
	for i, line := range lines {
		if lab.FenceOf(strings.TrimSpace(blockMarkers.ReplaceAllString(line, ""))).N > 0 {
			return "a code block"
		}
		if indentedCode(lines, i) {
			return "an indented code block"
		}
	}
	if htmlPre.MatchString(body) {
		return "a <pre> block"
	}
	spans := append(inlineCode.FindAllStringSubmatch(body, -1), htmlCode.FindAllStringSubmatch(body, -1)...)
	for _, m := range spans {
		span := m[1]
		if isCommand(span) || operatorAlone.MatchString(span) || route.MatchString(span) {
			continue
		}
		if statementLike.MatchString(" " + span + " ") {
			if len(span) > 40 {
				span = span[:37] + "..."
			}
			return "`" + span + "`"
		}
	}
	return ""
}

// listItem matches the first line of a Markdown list item.
var listItem = regexp.MustCompile(`^\s*([-*+]|[0-9]+[.)])\s`)

// indentedCode reports whether lines[i] begins an indented code block
// (CommonMark): after a blank line (or first), not blank, and indented by
// four columns or more beyond the content of the list item it is in, if
// any (a line indented as far as the item's text continues the item).
func indentedCode(lines []string, i int) bool {
	line := strings.TrimRight(lines[i], "\r")
	if strings.TrimSpace(line) == "" || i > 0 && strings.TrimSpace(lines[i-1]) != "" {
		return false
	}
	// The paragraph before the blank lines sets the indentation of its
	// content: a list item's text, or the indentation of a continuation.
	content := 0
	for j := i - 1; j >= 0; j-- {
		prev := strings.TrimRight(lines[j], "\r")
		if strings.TrimSpace(prev) == "" {
			continue
		}
		if m := listItem.FindString(prev); m != "" {
			content = lab.IndentOf(m) + len(strings.TrimLeft(m, " \t"))
		} else {
			content = lab.IndentOf(prev)
			if content >= 4 {
				content -= 4 // a line of indented code itself
			}
		}
		break
	}
	return lab.IndentOf(line) >= content+4
}
