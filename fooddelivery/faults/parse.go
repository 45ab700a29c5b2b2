package faults

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gophereats/resilience/fooddelivery/memnet"
)

// kind describes one fault kind of the flag syntax.
type kind struct {
	keys    []string // the keys it accepts
	example string
}

// httpKeys are accepted by every kind that acts on requests: p is the
// rule's Probability, fixed and jitter a delay before the effect, tail-p
// and tail-latency a rare long tail.
var httpKeys = []string{"p", "fixed", "jitter", "tail-p", "tail-latency"}

var kinds = map[string]kind{
	"latency":   {httpKeys, "payment=latency,fixed=50ms,jitter=20ms"},
	"tail":      {[]string{"p", "latency", "fixed", "jitter"}, "payment=tail,p=0.01,latency=1s,fixed=20ms"},
	"hang":      {append([]string{"max"}, httpKeys...), "payment:POST /charges=hang,max=30s"},
	"error":     {append([]string{"status", "retry-after"}, httpKeys...), "payment=error,status=503,p=0.5,retry-after=2"},
	"reset":     {httpKeys, "payment=reset,p=0.1"},
	"slowbody":  {append([]string{"over"}, httpKeys...), "menu=slowbody,over=30s"},
	"lose":      {httpKeys, "payment:POST /charges=lose"},
	"refuse":    {nil, "courier=refuse"},
	"blackhole": {nil, "courier=blackhole"},
	"crash":     {httpKeys, "payment:POST /charges=crash,p=0.1"},
	"slowclose": {[]string{"delay", "p"}, "payment=slowclose,delay=2s"},
	"bandwidth": {[]string{"rate", "p"}, "menu=bandwidth,rate=5"},
	"limitdata": {[]string{"bytes", "p"}, "menu=limitdata,bytes=500"},
}

var kindNames = []string{"latency", "tail", "hang", "error", "reset", "slowbody", "lose", "refuse", "blackhole", "crash", "slowclose", "bandwidth", "limitdata"}

// defaultHang is the longest a "hang" without max= hangs.
const defaultHang = 30 * time.Second

// Parse reads one -fault flag of cmd/fooddelivery:
//
//	service[:route]=kind[,key=value...]
//
// service is an instance or service name as for Injector.Set; route, when
// given, is an exact route name and may contain spaces
// ("payment:POST /charges=hang"). Durations use time.ParseDuration syntax
// ("50ms", "1m30s"); probabilities are fractions in [0, 1]. The kinds:
//
//	latency,fixed=50ms,jitter=20ms       a delay before the handler (Latency, Jitter)
//	tail,p=0.01,latency=1s[,fixed=20ms]  a fraction p waits latency instead of fixed
//	hang[,max=30s]                       hang until the caller gives up, at most max (default 30s)
//	error[,status=503][,retry-after=2]   answer status (default 503), optionally with Retry-After
//	reset                                close the connection without a response
//	slowbody,over=30s                    trickle the body over the given time
//	lose                                 run the handler, then drop its response
//	refuse                               refuse connects to the service
//	blackhole                            let connects to the service hang
//	crash                                run the handler, then kill the process before the answer (-processes only)
//	slowclose,delay=2s                   delay the close of each connection (-processes only)
//	bandwidth,rate=5                     answers flow at 5 KB a second (-processes only)
//	limitdata,bytes=500                  close a connection after 500 bytes of answers (-processes only)
//
// Every kind but refuse and blackhole also accepts p= (Probability: the
// fraction of requests the fault applies to; for tail, p= is the tail's
// own fraction instead), fixed= and jitter= (a delay before the effect),
// and tail-p= with tail-latency= (a long tail, for the kinds other than
// tail). Parse returns an error wrapping ErrInvalid that names the problem
// and shows an example.
func Parse(spec string) (Rule, error) {
	fail := func(example, format string, args ...any) (Rule, error) {
		if example == "" {
			example = "payment:POST /charges=error,status=503,p=0.5"
		}
		return Rule{}, fmt.Errorf("%w %q: %s (example: %s)", ErrInvalid, spec, fmt.Sprintf(format, args...), example)
	}
	lhs, rhs, ok := strings.Cut(spec, "=")
	if !ok {
		return fail("", "missing '=' between the target and the fault kind")
	}
	service, route, hasRoute := strings.Cut(lhs, ":")
	service = strings.TrimSpace(service)
	if service == "" {
		return fail("", "missing service name before '='")
	}
	if hasRoute && route == "" {
		return fail("", "empty route after ':'; leave out the ':' to match every route")
	}
	items := strings.Split(rhs, ",")
	name := strings.TrimSpace(items[0])
	if name == "" {
		return fail("", "missing fault kind after '='; kinds are %s", strings.Join(kindNames, ", "))
	}
	k, ok := kinds[name]
	if !ok {
		return fail("", "unknown fault kind %q; kinds are %s", name, strings.Join(kindNames, ", "))
	}

	// Collect key=value pairs. An HTTP-date contains a comma, so a piece
	// without '=' after retry-after continues its value.
	var keys []string
	values := map[string]string{}
	for _, item := range items[1:] {
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			if len(keys) > 0 && keys[len(keys)-1] == "retry-after" {
				values["retry-after"] += "," + item
				continue
			}
			return fail(k.example, "expected key=value after the kind, got %q", item)
		}
		key = strings.TrimSpace(key)
		if !slices.Contains(k.keys, key) {
			if len(k.keys) == 0 {
				return fail(k.example, "%s takes no keys, got %q", name, key)
			}
			return fail(k.example, "%s takes no key %q; it takes %s", name, key, strings.Join(k.keys, ", "))
		}
		if _, dup := values[key]; dup {
			return fail(k.example, "key %q given twice", key)
		}
		keys = append(keys, key)
		values[key] = strings.TrimSpace(value)
	}

	var f Fault
	var err error
	duration := func(key string, dst *time.Duration) {
		v, ok := values[key]
		if !ok || err != nil {
			return
		}
		d, perr := time.ParseDuration(v)
		switch {
		case perr != nil:
			err = fmt.Errorf("%s=%s is not a duration such as 50ms or 2s", key, v)
		case d < 0:
			err = fmt.Errorf("%s=%s is negative; durations must be >= 0", key, v)
		default:
			*dst = d
		}
	}
	fraction := func(key string, dst *float64) {
		v, ok := values[key]
		if !ok || err != nil {
			return
		}
		p, perr := strconv.ParseFloat(v, 64)
		switch {
		case perr != nil || math.IsNaN(p) || p < 0 || p > 1:
			err = fmt.Errorf("%s=%s is not a fraction in [0, 1] such as 0.25", key, v)
			return
		case p == 0: // a zero Probability means "every request" in a Fault
			err = fmt.Errorf("%s=%s would never fire; leave the rule out, or leave %s out to hit every request", key, v, key)
			return
		}
		*dst = p
	}
	duration("fixed", &f.Latency)
	duration("jitter", &f.Jitter)
	if err == nil && f.Latency > math.MaxInt64-f.Jitter {
		err = fmt.Errorf("fixed=%s plus jitter=%s is longer than a time.Duration can hold (292 years)", values["fixed"], values["jitter"])
	}
	duration("tail-latency", &f.TailLatency)
	fraction("tail-p", &f.TailProbability)
	if name == "tail" {
		fraction("p", &f.TailProbability)
		duration("latency", &f.TailLatency)
	} else {
		fraction("p", &f.Probability)
	}
	if err != nil {
		return fail(k.example, "%v", err)
	}
	has := func(key string) bool { _, ok := values[key]; return ok }

	switch name {
	case "latency":
		if !has("fixed") && !has("jitter") && !has("tail-p") && !has("tail-latency") {
			return fail(k.example, "latency needs fixed= or jitter=")
		}
	case "tail":
		if !has("p") || !has("latency") {
			return fail(k.example, "tail needs p= (the fraction of slow requests) and latency= (their delay)")
		}
	case "hang":
		f.Hang = defaultHang
		if has("max") {
			d, perr := time.ParseDuration(values["max"])
			if perr != nil || d <= 0 {
				return fail(k.example, "max=%s must be a positive duration such as 30s", values["max"])
			}
			f.Hang = d
		}
	case "error":
		f.Status = 503
		if has("status") {
			s, perr := strconv.Atoi(values["status"])
			if perr != nil || s < 200 || s > 599 {
				return fail(k.example, "status=%s must be an HTTP status in 200..599", values["status"])
			}
			f.Status = s
		}
		f.RetryAfter = values["retry-after"]
		if has("retry-after") && !validRetryAfter(f.RetryAfter) {
			return fail(k.example, "retry-after=%s must be seconds (2) or an HTTP-date (Wed, 21 Oct 2015 07:28:00 GMT)", f.RetryAfter)
		}
	case "reset":
		f.Reset = true
	case "slowbody":
		d, perr := time.ParseDuration(values["over"])
		if perr != nil || d <= 0 {
			return fail(k.example, "slowbody needs over= with a positive duration such as 30s")
		}
		f.SlowBody = d
	case "lose":
		f.LoseResponse = true
	case "crash":
		f.Crash = true
	case "refuse":
		f.Connect = memnet.Refused
	case "blackhole":
		f.Connect = memnet.BlackHoled
	case "slowclose":
		d, perr := time.ParseDuration(values["delay"])
		if perr != nil || d <= 0 {
			return fail(k.example, "slowclose needs delay= with a positive duration such as 2s")
		}
		f.SlowClose = d
	case "bandwidth", "limitdata":
		key := map[string]string{"bandwidth": "rate", "limitdata": "bytes"}[name]
		n, perr := strconv.ParseInt(values[key], 10, 64)
		if perr != nil || n <= 0 {
			return fail(k.example, "%s needs %s= with a whole number above 0", name, key)
		}
		if name == "bandwidth" {
			f.Bandwidth = n
		} else {
			f.LimitData = n
		}
	}
	if err := validate(service, route, f); err != nil {
		return fail(k.example, "%v", err)
	}
	return Rule{Service: service, Route: route, Fault: f}, nil
}

// String writes the rule in the flag syntax that Parse reads, so that
// Parse(r.String()) gives r back for every rule that Set accepts.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(r.Service)
	if r.Route != "" {
		b.WriteString(":" + r.Route)
	}
	b.WriteString("=")
	f := r.Fault
	kv := func(key, value string) { b.WriteString("," + key + "=" + value) }
	dur := func(key string, d time.Duration) {
		if d != 0 {
			kv(key, d.String())
		}
	}
	frac := func(key string, p float64) {
		if p != 0 {
			kv(key, strconv.FormatFloat(p, 'g', -1, 64))
		}
	}
	common := func() {
		dur("fixed", f.Latency)
		dur("jitter", f.Jitter)
		frac("tail-p", f.TailProbability)
		dur("tail-latency", f.TailLatency)
		frac("p", f.Probability)
	}
	switch {
	case f.Connect == memnet.Refused:
		b.WriteString("refuse")
	case f.Connect == memnet.BlackHoled:
		b.WriteString("blackhole")
	case f.SlowClose > 0:
		b.WriteString("slowclose")
		kv("delay", f.SlowClose.String())
		frac("p", f.Probability)
	case f.Bandwidth > 0:
		b.WriteString("bandwidth")
		kv("rate", strconv.FormatInt(f.Bandwidth, 10))
		frac("p", f.Probability)
	case f.LimitData > 0:
		b.WriteString("limitdata")
		kv("bytes", strconv.FormatInt(f.LimitData, 10))
		frac("p", f.Probability)
	case f.Hang > 0:
		b.WriteString("hang")
		kv("max", f.Hang.String())
		common()
	case f.Status != 0:
		b.WriteString("error")
		kv("status", strconv.Itoa(f.Status))
		if f.RetryAfter != "" {
			kv("retry-after", f.RetryAfter)
		}
		common()
	case f.Reset:
		b.WriteString("reset")
		common()
	case f.SlowBody > 0:
		b.WriteString("slowbody")
		kv("over", f.SlowBody.String())
		common()
	case f.LoseResponse:
		b.WriteString("lose")
		common()
	case f.Crash:
		b.WriteString("crash")
		common()
	case f.TailProbability > 0 && f.Probability == 0:
		b.WriteString("tail")
		frac("p", f.TailProbability)
		kv("latency", f.TailLatency.String())
		dur("fixed", f.Latency)
		dur("jitter", f.Jitter)
	default:
		b.WriteString("latency")
		if f.Latency == 0 && f.Jitter == 0 && f.TailProbability == 0 && f.TailLatency == 0 {
			kv("fixed", "0s")
		}
		common()
	}
	return b.String()
}
