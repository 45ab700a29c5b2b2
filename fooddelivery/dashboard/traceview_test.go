package dashboard

import (
	"html"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The trace view takes its filters and the trace to open, each value one
// the admin API lists, alone or together.
func TestTraceViewTakesItsFilters(t *testing.T) {
	for _, q := range []string{
		"view=traces",
		"view=traces&flow=checkout",
		"view=traces&flow=browse",
		"view=traces&outcome=failed",
		"view=traces&outcome=slow",
		"view=traces&outcome=retried",
		"view=traces&outcome=hedged",
		"view=traces&outcome=fallback",
		"view=traces&trace=newest",
		"view=traces&trace=a95e4b67da66d7a946545af858c865cb",
		"view=traces&trace=00000000000000000000000000000001",
		"flow=checkout&outcome=failed&trace=newest&view=traces",
	} {
		view, msg := pageView(q)
		if view != ViewTraces || msg != "" {
			t.Errorf("?%s gives view %q and the refusal %q, want the trace view", q, view, msg)
		}
	}
}

// A filter or trace the trace view does not take, one given twice, or a
// trace view parameter on another view is refused with a message that
// names what is wrong and what to give instead.
func TestTraceViewRefusesBadFilters(t *testing.T) {
	for q, want := range map[string][]string{
		"view=traces&flow=nonsense":                           {`flow "nonsense" is not a flow`, "checkout or browse"},
		"view=traces&flow=":                                   {`flow "" is not a flow`, "leave flow out"},
		"view=traces&flow=Checkout":                           {`flow "Checkout"`},
		"view=traces&outcome=FAILED":                          {`outcome "FAILED" is not an outcome`, "failed, slow, retried, hedged, fallback"},
		"view=traces&outcome=replayed":                        {`outcome "replayed"`, "leave outcome out"},
		"view=traces&trace=abc":                               {`trace "abc" is not a trace id`, "32 lowercase hex digits", "newest"},
		"view=traces&trace=A95E4B67DA66D7A946545AF858C865CB":  {`trace "A95E4B67DA66D7A946545AF858C865CB" is not a trace id`},
		"view=traces&trace=00000000000000000000000000000000":  {"is not a trace id"},
		"view=traces&trace=a95e4b67da66d7a946545af858c865cbx": {"is not a trace id"},
		"view=traces&trace=latest":                            {`trace "latest"`, "newest"},
		"view=traces&flow=checkout&flow=browse":               {"flow is given 2 times on the trace view"},
		"view=traces&trace=newest&trace=newest":               {"trace is given 2 times"},
		"view=traces&limit=5":                                 {`unknown query parameter "limit"`, "flow, outcome, trace"},
		"view=room&outcome=failed":                            {`unknown query parameter "outcome"`, "/?view=traces"},
		"outcome=failed":                                      {`unknown query parameter "outcome"`, "/?view=traces"},
		"view=full&flow=checkout&trace=newest":                {`unknown query parameters "flow", "trace"`},
		"view=traces&view=traces&flow=checkout":               {`unknown query parameter "flow"`},
		"view=trace":                                          {`view "trace" is not one of`, "traces (the latest traces"},
	} {
		view, msg := pageView(q)
		if view != "" || msg == "" {
			t.Errorf("?%s gives view %q without a refusal, want a refusal", q, view)
			continue
		}
		for _, s := range want {
			if !strings.Contains(msg, s) {
				t.Errorf("?%s is refused with %q, which does not say %q", q, msg, s)
			}
		}
	}
}

// traceLink finds the page's links into the trace view.
var traceLink = regexp.MustCompile(`href="(\?view=traces[^"]*)"`)

// The metric panels link to the trace view, each with a query the page
// takes, opening the newest trace of what the panel counts: failed
// checkouts, retries, hedges, fallbacks and slow traces; the views link to
// one another.
func TestPanelsLinkToTheirTraces(t *testing.T) {
	b, err := fs.ReadFile(Files(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, v := range views {
		if !strings.Contains(page, `href="?view=`+v+`"`) {
			t.Errorf("the page does not link to the %s view", v)
		}
	}
	var outcomes []string
	links := traceLink.FindAllStringSubmatch(page, -1)
	for _, m := range links {
		href := html.UnescapeString(m[1])
		if href == "?view="+ViewTraces {
			continue
		}
		q := strings.TrimPrefix(href, "?")
		if view, msg := pageView(q); view != ViewTraces {
			t.Errorf("the link %s is refused by the page: %s", href, msg)
			continue
		}
		v, _ := url.ParseQuery(q)
		if v.Get("trace") != TraceNewest {
			t.Errorf("the link %s does not open the newest trace (trace=%s)", href, TraceNewest)
		}
		outcomes = append(outcomes, v.Get("outcome"))
	}
	for _, o := range []string{"failed", "retried", "hedged", "fallback", "slow"} {
		if !slices.Contains(outcomes, o) {
			t.Errorf("no panel links to the %s traces; the %d links name %v", o, len(links), outcomes)
		}
	}
}
