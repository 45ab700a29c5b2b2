package labtest_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/labtest"
)

// fakeBase answers GET with 200 "hello" after a second, and fails anything else.
type fakeBase struct{}

func (fakeBase) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(time.Second)
	if r.Method != http.MethodGet {
		return nil, errors.New("refused")
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("hello")), Request: r}, nil
}

func TestSpyRecordsAttempts(t *testing.T) {
	labtest.Run(t, labtest.Options{}, func(t *testing.T) {
		var hooks []string
		s := &labtest.Spy{Base: fakeBase{},
			Before: func(n int) { hooks = append(hooks, "before", string(rune('0'+n))) },
			After:  func(n int) { hooks = append(hooks, "after", string(rune('0'+n))) },
		}
		require.Equal(t, "none", s.Hosts())
		req, _ := http.NewRequest(http.MethodGet, "http://menu-1/restaurants/luigis/menu", nil)
		resp, err := s.RoundTrip(req)
		require.NoError(t, err)
		time.Sleep(250 * time.Millisecond)
		post, _ := http.NewRequest(http.MethodPost, "http://payment/charges", nil)
		_, err = s.RoundTrip(post)
		require.Error(t, err)

		require.Equal(t, []string{"before", "1", "after", "1", "before", "2", "after", "2"}, hooks)
		require.Equal(t, 2, s.Count())
		require.Equal(t, 1, s.CountMethod(http.MethodPost))
		require.Equal(t, "menu-1, payment", s.Hosts())
		require.Equal(t, []time.Duration{250 * time.Millisecond}, s.Gaps())
		as := s.Attempts()
		require.Equal(t, "/restaurants/luigis/menu", as[0].Path)
		require.Equal(t, time.Second, as[0].End.Sub(as[0].Start))
		require.Equal(t, 200, as[0].Status)
		require.Zero(t, as[1].Status)
		require.Error(t, as[1].Err)
		require.Nil(t, as[1].Body)
		require.Equal(t, req.Context(), as[0].Ctx)

		require.Equal(t, 1, s.OpenBodies())
		b := make([]byte, 2)
		_, _ = resp.Body.Read(b)
		read, eof, closed := as[0].Body.State()
		require.Equal(t, int64(2), read)
		require.False(t, eof)
		require.False(t, closed)
		_, _ = io.ReadAll(resp.Body)
		s.CloseBodies()
		read, eof, closed = as[0].Body.State()
		require.Equal(t, int64(5), read)
		require.True(t, eof)
		require.True(t, closed)
		require.Zero(t, s.OpenBodies())
	})
}

func TestSpySwapsBodies(t *testing.T) {
	labtest.Run(t, labtest.Options{}, func(t *testing.T) {
		s := &labtest.Spy{Base: fakeBase{}, SwapBody: func(n int) io.ReadCloser {
			if n == 2 {
				return io.NopCloser(strings.NewReader("swapped"))
			}
			return nil
		}}
		var got []string
		for range 2 {
			req, _ := http.NewRequest(http.MethodGet, "http://menu-2/", nil)
			resp, err := s.RoundTrip(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got = append(got, string(body))
		}
		require.Equal(t, []string{"hello", "swapped"}, got)
	})
}
