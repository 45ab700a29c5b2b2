package fooddelivery

import (
	"bufio"
	"net"
	"net/http"
)

// StatusNoResponse is the status code under which a route counts a request
// that got no HTTP response from it: the connection was taken over
// (hijacked) and closed, as the faults Reset and LoseResponse do, or the
// handler panicked (http.ErrAbortHandler, say) before writing a status.
// Proxies such as Envoy report such requests with code 0 as well.
const StatusNoResponse = 0

// statusWriter records the status a handler sends. It passes everything
// else through: Flush and Hijack (so http.Flusher and http.Hijacker type
// assertions keep working), and Unwrap, through which
// http.ResponseController reaches deadlines and full duplex.
type statusWriter struct {
	http.ResponseWriter
	status   int  // the final status written; 0 until one is
	hijacked bool // the connection was taken over
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // a 1xx response is not final
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK // net/http sends 200 before the first write
	}
	return w.ResponseWriter.Write(p)
}

// FlushError flushes the underlying writer; http.ResponseController
// prefers it to Flush because it reports an error.
func (w *statusWriter) FlushError() error {
	if w.status == 0 {
		w.status = http.StatusOK // flushing sends the header
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush implements http.Flusher for handlers that assert it; an error
// (the underlying writer cannot flush) is dropped, as http.Flusher has no
// way to report it.
func (w *statusWriter) Flush() { _ = w.FlushError() }

// Hijack implements http.Hijacker; it fails, as the underlying writer
// does, where hijacking is not supported (HTTP/2).
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status to count once the handler is done. finished says
// whether it returned normally (net/http then sends 200 if it wrote
// nothing).
func (w *statusWriter) code(finished bool) int {
	switch {
	case w.hijacked:
		return StatusNoResponse
	case w.status != 0:
		return w.status
	case finished:
		return http.StatusOK
	default:
		return StatusNoResponse
	}
}
