package fooddelivery

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestCallersRecordsACallerThatGaveUpWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCallers()
		var sentID string
		hanging := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			sentID = r.Header.Get(HeaderRequestID)
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		ctx, cancel := context.WithTimeout(WithRequestID(context.Background(), "req-a"), 2*time.Second)
		defer cancel()
		began := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://menu/popular", nil)
		if _, err := c.Track(hanging).RoundTrip(req); err == nil {
			t.Fatal("the hanging call succeeded")
		}
		synctest.Wait()
		if sentID != "req-a" {
			t.Errorf("the request went out with id %q, want the context's %q", sentID, "req-a")
		}
		at, gone := c.Gone("req-a")
		if !gone || at.Sub(began) != 2*time.Second {
			t.Errorf("Gone = %v, %v; want the caller gone 2s after it began", at.Sub(began), gone)
		}
	})
}

func TestCallersIgnoresACallerThatEndsAfterItsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCallers()
		answering := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}}, nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://menu/popular", nil)
		resp, err := c.Track(answering).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		synctest.Wait()
		if n := c.gone.Len(); n != 0 {
			t.Errorf("a caller that had its answer was recorded as gone: %d records", n)
		}
		var nilCallers *Callers
		if _, gone := nilCallers.Gone("x"); gone {
			t.Error("a nil *Callers knows of a caller that left")
		}
	})
}
