package system

import (
	"bufio"
	"bytes"
	"net"
	"net/http"

	"github.com/gophereats/resilience/fooddelivery"
)

// answered returns mw followed, for each request, by a call to answer
// with the status and body the route wrote, or mw itself when answer is
// nil.
func answered(answer func(instance, route string, status int, body []byte), mw fooddelivery.Middleware) fooddelivery.Middleware {
	if answer == nil {
		return mw
	}
	return func(instance, route string, next http.Handler) http.Handler {
		next = mw(instance, route, next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tw := &teeWriter{ResponseWriter: w}
			defer func() {
				status := tw.status
				if tw.hijacked {
					status = fooddelivery.StatusNoResponse
				}
				answer(instance, route, status, tw.body.Bytes())
			}()
			next.ServeHTTP(tw, r)
		})
	}
}

// teeWriter keeps a copy of what a handler writes, and its status, and
// passes everything through; Unwrap lets http.ResponseController reach
// the writer underneath (the faults hijack through it).
type teeWriter struct {
	http.ResponseWriter
	status   int
	hijacked bool
	body     bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack takes the connection over through the writer underneath.
func (w *teeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}
