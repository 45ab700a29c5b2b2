package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/retry"
)

func TestMarkDontRetryKeepsTheOriginalError(t *testing.T) {
	marked := retry.MarkDontRetry(fmt.Errorf("charging: %w", errDown))
	assert.True(t, fooddelivery.DontRetry(marked))
	assert.ErrorIs(t, marked, fooddelivery.ErrUnavailable)
	assert.ErrorIs(t, marked, errDown)
	var ce *fooddelivery.CallError
	if assert.ErrorAs(t, marked, &ce) {
		assert.Equal(t, 503, ce.Status)
		assert.True(t, ce.DontRetry)
	}
	assert.False(t, errDown.DontRetry, "the original is not changed")
	assert.Equal(t, "charging: "+errDown.Error(), marked.Error())

	plain := retry.MarkDontRetry(errors.New("boom"))
	assert.True(t, fooddelivery.DontRetry(plain))
	assert.Nil(t, retry.MarkDontRetry(nil))

	rec := httptest.NewRecorder()
	fooddelivery.WriteDependencyError(rec, httptest.NewRequest("POST", "/orders", nil), "payment", marked)
	assert.Equal(t, "1", rec.Header().Get(fooddelivery.HeaderDontRetry), "the signal is passed on")
	assert.Equal(t, http.StatusBadGateway, rec.Code)
}

func TestRetryEveryFailureIgnoresTheSignal(t *testing.T) {
	assert.True(t, retry.RetryEveryFailure(retry.MarkDontRetry(errDown)))
	assert.True(t, retry.RetryEveryFailure(fooddelivery.ErrOverloaded))
	assert.False(t, retry.RetryEveryFailure(fooddelivery.ErrRejected))
	assert.False(t, retry.RetryEveryFailure(context.Canceled))
	assert.False(t, retry.RetryEveryFailure(nil))
}

func TestAttemptFromContext(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, 1, retry.AttemptFrom(ctx))
	assert.Equal(t, 3, retry.AttemptFrom(retry.WithAttempt(ctx, 3)))
	assert.True(t, retry.Layers{}.IsZero())
	assert.False(t, retry.NaiveLayers(1).IsZero())
}
