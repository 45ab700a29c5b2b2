package dispatch_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/courier"
	"github.com/gophereats/resilience/fooddelivery/dispatch"
)

func TestQueueRedeliversAndDeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &dispatch.Queue{MaxReceives: 3}
		q.Publish("o1", "r")
		q.Publish("o2", "r")
		seen := map[string][]int{}
		began := time.Now()
		err := q.Consume(context.Background(), 1, func(_ context.Context, m dispatch.Message) error {
			seen[m.OrderID] = append(seen[m.OrderID], m.Receives)
			if m.OrderID == "o1" {
				return context.DeadlineExceeded // always fails
			}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, []int{1, 2, 3}, seen["o1"], "received MaxReceives times")
		assert.Equal(t, []int{1}, seen["o2"])
		// Three receives, each followed by a visibility timeout; the message
		// moves to the dead-letter queue when it would be received a fourth
		// time.
		assert.Equal(t, 3*dispatch.DefaultVisibilityTimeout, time.Since(began))
		dead := q.DeadLetters()
		require.Len(t, dead, 1)
		assert.Equal(t, "o1", dead[0].OrderID)

		assert.Equal(t, 1, q.Redrive())
		var redriven dispatch.Message
		require.NoError(t, q.Consume(context.Background(), 1, func(_ context.Context, m dispatch.Message) error {
			redriven = m
			return nil
		}))
		assert.NotEqual(t, dead[0].ID, redriven.ID, "a redriven message has a new id")
		assert.Equal(t, 1, redriven.Receives)
	})
}

func TestConsumeStoppedByItsContextReturnsTheContextsErrorOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &dispatch.Queue{}
		q.Publish("o1", "r")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := q.Consume(ctx, 3, func(context.Context, dispatch.Message) error {
			return context.DeadlineExceeded // never deleted: the queue never drains
		})
		assert.Equal(t, context.DeadlineExceeded, err, "got %q, want ctx's error once, whatever the number of workers", err)
	})
}

func TestQueueRedeliversWhileSlowHandlerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &dispatch.Queue{VisibilityTimeout: 10 * time.Second}
		q.Publish("o1", "r")
		var mu sync.Mutex
		var receives []int
		require.NoError(t, q.Consume(context.Background(), 2, func(_ context.Context, m dispatch.Message) error {
			mu.Lock()
			receives = append(receives, m.Receives)
			mu.Unlock()
			if m.Receives == 1 {
				time.Sleep(15 * time.Second)
			}
			return nil
		}))
		assert.Equal(t, []int{1, 2}, receives, "a second worker receives the message after the visibility timeout")
	})
}

func TestFleetCountsDistinctCouriers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := dispatch.NewFleet(courier.NewBoard("a", "b"))
		m := dispatch.Message{OrderID: "o1"}
		require.NoError(t, f.Send(context.Background(), "a", m))
		require.NoError(t, f.Send(context.Background(), "a", m))
		assert.Equal(t, []string{"a"}, f.Couriers("o1"), "the same courier twice is one trip")
		assert.Equal(t, "b", f.Freest())
		require.NoError(t, f.Send(context.Background(), "b", m))
		assert.Equal(t, []string{"a", "b"}, f.Couriers("o1"))
		assert.Equal(t, 3, f.Pushes())
		f.FailNext(1)
		assert.ErrorIs(t, f.Send(context.Background(), "a", m), dispatch.ErrPhoneUnreachable)
	})
}

func TestNaiveConsumerSendsASecondCourierOnRedelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleet := dispatch.NewFleet(courier.NewBoard())
		crashed := false
		q := &dispatch.Queue{CrashAfterHandling: func(dispatch.Message) bool {
			first := !crashed
			crashed = true
			return first // the consumer crashes once, after sending, before deleting
		}}
		q.Publish("o1", "luigis")
		require.NoError(t, q.Consume(context.Background(), 1, func(ctx context.Context, m dispatch.Message) error {
			return dispatch.NaiveAssignCourier(ctx, fleet, m)
		}))
		assert.Len(t, fleet.Couriers("o1"), 2, "the redelivery sends the freest courier again: another one")
	})
}
