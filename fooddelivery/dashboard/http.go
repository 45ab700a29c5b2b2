package dashboard

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/scenario"
)

//go:embed static
var static embed.FS

// Files returns the embedded page and assets, rooted at the directory
// the page is in.
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	return sub
}

// Paths the dashboard serves.
const (
	PagePath   = "/"
	StaticPath = "/dashboard/static/"
	StatePath  = "/dashboard/state"
	EventsPath = "/dashboard/events"
)

// The page's layouts, chosen with ?view= on PagePath.
const (
	// ViewFull is the default: every panel, for a laptop's screen.
	ViewFull = "full"
	// ViewRoom is for a projector: the diagram large and the few numbers
	// a live demo talks about, in a 1280x720 viewport without scrolling.
	ViewRoom = "room"
)

// views are the values ?view= takes on PagePath, the default first.
var views = []string{ViewFull, ViewRoom, ViewTraces}

// viewAttr is the page's attribute that names its layout; the page is
// written with the default's, and served with the view asked for.
const viewAttr = `data-view="` + ViewFull + `"`

// State is the answer of GET /dashboard/state.
type State struct {
	Frame       *Frame            `json:"frame"`
	History     []Point           `json:"history"`
	Transitions []Transition      `json:"transitions"`
	Changes     []scenario.Change `json:"changes"`
	Scenario    *scenario.Status  `json:"scenario"`
	Load        *loadgen.Stats    `json:"load"`
	Labs        []string          `json:"labs"`
	Thresholds  Thresholds        `json:"thresholds"`
	Interval    float64           `json:"intervalSeconds"`
}

// Thresholds are the error rates at which an edge turns degraded and
// failing, shown beside the measured ones.
type Thresholds struct {
	Degraded float64 `json:"degraded"`
	Failing  float64 `json:"failing"`
}

// Event is the data of one server-sent "frame" event.
type Event struct {
	Frame    *Frame            `json:"frame"`
	Changes  []scenario.Change `json:"changes"` // logged since the previous event
	Scenario *scenario.Status  `json:"scenario"`
	Load     *loadgen.Stats    `json:"load"`
	Labs     []string          `json:"labs"`
}

// ServeHTTP serves the page at "/", its assets under /dashboard/static/,
// the state and the event stream; anything else is 404. Only GET and
// HEAD are served. The page takes the query parameter view (ViewFull,
// the default, ViewRoom or ViewTraces), and in the trace view flow,
// outcome and trace (see ViewTraces); any other parameter, another view
// or a value the trace view does not take is answered 400 with a
// plain-text message that names it.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the dashboard is read with GET", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == PagePath:
		view, msg := pageView(r.URL.RawQuery)
		if msg != "" {
			http.Error(w, msg, http.StatusBadRequest)
			return
		}
		d.serveFile(w, r, "static/index.html", func(b []byte) []byte {
			return bytes.Replace(b, []byte(viewAttr), []byte(`data-view="`+view+`"`), 1)
		})
	case strings.HasPrefix(p, StaticPath) && p != StaticPath:
		d.serveFile(w, r, "static/"+strings.TrimPrefix(p, StaticPath), nil)
	case p == StatePath:
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, d.State())
	case p == EventsPath:
		d.serveEvents(w, r)
	default:
		http.NotFound(w, r)
	}
}

// pageView returns the view the page's query asks for, or a message that
// says what is wrong with the query. Only the trace view takes more than
// view: its filters and the trace to open (checkTraceParams).
func pageView(rawQuery string) (view, msg string) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", fmt.Sprintf("the query %s of the dashboard's page is not a URL query (%v); the page takes only view=%s",
			fooddelivery.Quote(rawQuery), err, strings.Join(views, " or view="))
	}
	vs, ok := q["view"]
	traceView := ok && len(vs) == 1 && vs[0] == ViewTraces
	var unknown []string
	for k := range q {
		if k != "view" && !(traceView && slices.Contains(traceParams, k)) {
			unknown = append(unknown, fooddelivery.Quote(k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		what := "parameter " + unknown[0]
		if len(unknown) > 1 {
			what = "parameters " + strings.Join(unknown, ", ")
		}
		return "", fmt.Sprintf("unknown query %s on the dashboard's page: it takes only view (%s or %s), as in /?view=%s; the trace view, /?view=%s, also takes %s",
			what, ViewFull, ViewRoom, ViewRoom, ViewTraces, strings.Join(traceParams, ", "))
	}
	switch {
	case !ok:
		return ViewFull, ""
	case len(vs) > 1:
		return "", fmt.Sprintf("view is given %d times on the dashboard's page; give it once: %s", len(vs), strings.Join(views, " or "))
	case !slices.Contains(views, vs[0]):
		return "", fmt.Sprintf("view %s is not one of the dashboard's views: they are %s (the default, every panel), %s (for a projector) and %s (the latest traces, one as a waterfall), as in /?view=%s",
			fooddelivery.Quote(vs[0]), ViewFull, ViewRoom, ViewTraces, ViewRoom)
	case traceView:
		if msg := checkTraceParams(q); msg != "" {
			return "", msg
		}
	}
	return vs[0], ""
}

// serveFile serves the embedded file name, through edit when not nil.
func (d *Dashboard) serveFile(w http.ResponseWriter, r *http.Request, name string, edit func([]byte) []byte) {
	name = path.Clean(name)
	if !strings.HasPrefix(name, "static/") || name == "static/index.html" && r.URL.Path != PagePath {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(static, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if edit != nil {
		b = edit(b)
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}

// State returns what GET /dashboard/state answers.
func (d *Dashboard) State() State {
	f, _ := d.Latest()
	s := State{Frame: f, History: d.History(), Transitions: d.Transitions(),
		Changes: []scenario.Change{}, Labs: d.cfg.Labs,
		Thresholds: Thresholds{Degraded: d.cfg.Degraded, Failing: d.cfg.Failing}, Interval: d.cfg.Interval.Seconds()}
	if c := d.cfg.Log.Changes(0); c != nil {
		s.Changes = c
	}
	s.Scenario, s.Load = d.status()
	return s
}

func (d *Dashboard) status() (*scenario.Status, *loadgen.Stats) {
	var st *scenario.Status
	var ld *loadgen.Stats
	if d.cfg.Status != nil {
		s := d.cfg.Status()
		st = &s
	}
	if d.cfg.Load != nil {
		s := d.cfg.Load()
		ld = &s
	}
	return st, ld
}

// serveEvents streams one event per tick until the client goes away or
// the dashboard closes. ?after=N starts the changes after change number N
// (the last one the page has); without it, after the latest logged.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	if n := d.streams.Add(1); n > int64(d.cfg.MaxStreams) {
		d.streams.Add(-1)
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("too many dashboard streams: %d are open, the most there may be; close a tab that shows the dashboard, then reload",
			d.cfg.MaxStreams), http.StatusServiceUnavailable)
		return
	}
	defer d.streams.Add(-1)
	rc := http.NewResponseController(w)
	// Every write must reach the client within StreamWriteTimeout: a
	// stream whose reader stopped reading ends instead of holding memory.
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(StreamWriteTimeout)) }
	deadline()
	after := int64(-1)
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "after must be a change number, 0 or more", http.StatusBadRequest)
			return
		}
		after = n
	}
	if after < 0 {
		after = 0
		if c := d.cfg.Log.Changes(0); len(c) > 0 {
			after = c[len(c)-1].Seq
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// Tell the browser to wait a little before reconnecting, and show
	// the stream is open before the first tick.
	fmt.Fprint(w, "retry: 2000\n\n")
	if err := rc.Flush(); err != nil {
		return
	}
	_, next := d.Latest()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-d.closed:
			return
		case <-next:
		}
		var f *Frame
		f, next = d.Latest()
		ev := Event{Frame: f, Changes: d.cfg.Log.Changes(after), Labs: d.cfg.Labs}
		if ev.Changes == nil {
			ev.Changes = []scenario.Change{}
		}
		if n := len(ev.Changes); n > 0 {
			after = ev.Changes[n-1].Seq
		}
		ev.Scenario, ev.Load = d.status()
		b, err := json.Marshal(ev)
		if err != nil {
			return
		}
		deadline()
		if _, err := fmt.Fprintf(w, "event: frame\ndata: %s\n\n", b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "the dashboard could not encode its state", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}
