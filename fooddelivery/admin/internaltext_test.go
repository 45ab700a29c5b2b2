package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery/faults"
)

// An error of no kind the API knows, and a handler's panic, are answered
// 500 with a fixed message: their text (a Go error chain, a panic's value)
// is not the caller's. An error about the request keeps its words.
func TestInternalFailuresAnswerAFixedMessage(t *testing.T) {
	internal := fmt.Errorf("saving rule: %w", errors.New(`Post "http://payment/x": dial tcp 127.0.0.1:1: connection refused`))
	w := httptest.NewRecorder()
	fail(w, internal)
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.NotContains(t, w.Body.String(), "http://", "an unknown error's text stays out of the answer")
	assert.Contains(t, w.Body.String(), "the system's state is as it was")

	w = httptest.NewRecorder()
	fail(w, fmt.Errorf("%w: the latency 5x is not a duration", faults.ErrInvalid))
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Contains(t, w.Body.String(), "the latency 5x is not a duration", "an error about the request says what is wrong")

	w = httptest.NewRecorder()
	recoverJSON(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(fmt.Sprintf("runtime error at %s", "/work/main/fooddelivery/admin/admin.go:12"))
	})).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/admin/faults", nil))
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.NotContains(t, w.Body.String(), ".go:", "a panic's value stays out of the answer")
	assert.Contains(t, w.Body.String(), "the admin API failed while answering this request")
}
