package retry_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/retry"
)

// stubTransport answers each request with the next status of statuses
// and records the bodies it was sent.
type stubTransport struct {
	statuses []int
	bodies   []string
	closed   int
}

func (s *stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body := ""
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	}
	s.bodies = append(s.bodies, body)
	status := s.statuses[min(len(s.bodies), len(s.statuses))-1]
	return &http.Response{StatusCode: status, Body: closeCounter{io.NopCloser(strings.NewReader("x")), &s.closed}}, nil
}

type closeCounter struct {
	io.ReadCloser
	n *int
}

func (c closeCounter) Close() error { *c.n++; return c.ReadCloser.Close() }

func TestNaiveTransportRetriesEveryFailureAtOnceWithoutTheBody(t *testing.T) {
	stub := &stubTransport{statuses: []int{503, 404, 201}}
	req, err := http.NewRequest(http.MethodPost, "http://payment/charges", strings.NewReader(`{"orderId":"o1"}`))
	require.NoError(t, err)
	resp, err := retry.NaiveTransport(stub).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode, "the third attempt's answer comes back")
	assert.Equal(t, []string{`{"orderId":"o1"}`, "", ""}, stub.bodies,
		"a 503 and a 404 are both retried, a POST too, and the retries go out without the body the first attempt read")
	assert.Equal(t, 2, stub.closed, "the two dropped answers are closed")

	stub = &stubTransport{statuses: []int{500}}
	req, _ = http.NewRequest(http.MethodGet, "http://payment/charges?order=o1", nil)
	resp, err = retry.NaiveTransport(stub).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 500, resp.StatusCode, "after the last attempt its answer comes back, unread")
	assert.Len(t, stub.bodies, retry.DefaultAttempts)
}
