package dashboard

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

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
// HEAD are served.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the dashboard is read with GET", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == PagePath:
		d.serveFile(w, r, "static/index.html")
	case strings.HasPrefix(p, StaticPath) && p != StaticPath:
		d.serveFile(w, r, "static/"+strings.TrimPrefix(p, StaticPath))
	case p == StatePath:
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, d.State())
	case p == EventsPath:
		d.serveEvents(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (d *Dashboard) serveFile(w http.ResponseWriter, r *http.Request, name string) {
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
	rc := http.NewResponseController(w)
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
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}
