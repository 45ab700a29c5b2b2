package faults

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// slowBodyPieces is the most pieces a slow body is cut into.
const slowBodyPieces = 20

// sleep waits d on the (possibly fake) clock. It returns false, early, when
// ctx is done first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// dropConnection closes the client's connection without sending a
// response. Where the connection cannot be hijacked (HTTP/2, or a writer
// that does not unwrap to one that can), it panics with
// http.ErrAbortHandler, which makes net/http drop the connection or reset
// the stream instead.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Returning would let net/http send an empty 200; aborting the
		// handler is the only other way to send nothing.
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// maxBufferedBody is the largest request body bufferBody keeps in memory.
const maxBufferedBody = 1 << 20

// bufferBody reads the request body (up to maxBufferedBody bytes) into
// memory and puts it back for the handler. net/http notices that a client
// went away (and cancels the request's context) only once the body has
// been read, so a fault that waits must read it first, or it would wait
// for nobody and outlive the connection.
func bufferBody(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	buf, _ := io.ReadAll(io.LimitReader(r.Body, maxBufferedBody))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
}

// recorder is a ResponseWriter that keeps the response in memory. Its
// header map is the real writer's, which has sent nothing yet.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder(w http.ResponseWriter) *recorder { return &recorder{header: w.Header()} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 && status >= 200 { // 1xx responses are not final
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// Flush does nothing: the response is sent later, or never.
func (r *recorder) Flush() {}

// trickle sends rec's status and headers at once and its body over d, in
// at most slowBodyPieces pieces spread evenly so that the last one goes out
// d after the headers. It stops when ctx is done or a write fails.
func trickle(ctx context.Context, w http.ResponseWriter, rec *recorder, d time.Duration) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	rc := http.NewResponseController(w)
	w.WriteHeader(rec.status)
	if err := rc.Flush(); err != nil {
		return
	}
	body := rec.body.Bytes()
	pieces := min(slowBodyPieces, len(body))
	var waited time.Duration
	for i := range pieces {
		due := d * time.Duration(i+1) / time.Duration(pieces)
		if !sleep(ctx, due-waited) {
			return
		}
		waited = due
		if _, err := w.Write(body[i*len(body)/pieces : (i+1)*len(body)/pieces]); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
