package fallback_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// storeDownAfter is how long the review store stays down after a review
// was deferred, so that the publisher's first attempts meet it down.
const storeDownAfter = 3 * time.Second

func TestStep4ReviewAcceptedWhileStoreIsDown(t *testing.T) {
	for _, o := range []outage{answers503, hangs} {
		t.Run("store "+o.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4, Stuck: "a review was still waiting for the review store", Leak: publisherLeak}, func(t *testing.T) {
				const text = "Best margherita in town"
				l := start(t)
				l.breakRoutes(t, o.fault, "menu", reviewsRoute)

				resp, s, took := l.submitReview(t, 4, alice, system.SampleRestaurant, text)
				if s.SubmitReview == nil || s.SubmitReview.Text != text || took > pageLimit {
					t.Fatalf("step 4: the review store %s; submitReview answered after %v with %s. Accept the review: "+
						"answer with it as submitted (within %v) and keep it to publish when the store is back.",
						o.name, took, summary(resp), pageLimit)
				}
				require.Zero(t, l.sys.Reviews.Len(), "step 4: the store was down, so nothing can be stored yet")

				time.Sleep(storeDownAfter) // the publisher meets the store down too
				l.sys.Faults.ClearAll()
				time.Sleep(publishWithin)
				if n := l.reviewsWithText(system.SampleRestaurant, text); n == 0 {
					t.Fatalf("step 4: the review store %s for %v more after the review was accepted; %v after it came back, "+
						"the review had not been stored. Publish deferred reviews from a goroutine that tries again every "+
						"second or so, each attempt bounded by fallback.WriteBudget (an attempt that waits on a hanging "+
						"store holds up every review behind it).", o.name, storeDownAfter, publishWithin)
				} else if n > 1 {
					t.Fatalf("step 4: the review store %s for %v more after the review was accepted; %v after it came back, "+
						"the review had been stored %d times; want exactly once. Only one goroutine may publish, and a "+
						"review leaves the queue as soon as the store took it.", o.name, storeDownAfter, publishWithin, n)
				}
				time.Sleep(time.Minute)
				if n := l.reviewsWithText(system.SampleRestaurant, text); n != 1 {
					t.Fatalf("step 4: a minute later the review had been stored %d times: once the store took it, "+
						"a review must leave the queue.", n)
				}
			})
		})
	}
}

func TestStep4FlakyRecoveryPublishesEachReviewOnce(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Leak: publisherLeak}, func(t *testing.T) {
		const reviews = 8
		const flaky = 20 * time.Second
		l := start(t)
		l.breakRoutes(t, answers503.fault, "menu", reviewsRoute)
		for i := range reviews {
			resp, s, took := l.submitReview(t, 4, alice, system.SampleRestaurant, fmt.Sprintf("review %d", i))
			if s.SubmitReview == nil {
				t.Fatalf("step 4: review %d of %d, submitted while the review store answers 503, was not accepted: "+
					"submitReview answered after %v with %s. Accept it and publish it later.", i+1, reviews, took, summary(resp))
			}
		}
		// The store comes back unreliable: half of its answers are errors.
		l.breakRoutes(t, faults.Fault{Status: 503, Probability: 0.5}, "menu", reviewsRoute)
		time.Sleep(flaky)
		l.sys.Faults.ClearAll()
		time.Sleep(publishWithin)

		lost, doubled, stored := 0, 0, l.sys.Reviews.Len()
		for i := range reviews {
			switch n := l.reviewsWithText(system.SampleRestaurant, fmt.Sprintf("review %d", i)); {
			case n == 0:
				lost++
			case n > 1:
				doubled++
			}
		}
		if lost > 0 || doubled > 0 {
			t.Fatalf("step 4: %d reviews were accepted while the store was down; it came back unreliable (half of its "+
				"answers errors) for %v, then healthy. %d were never published and %d were published more than once "+
				"(%d stored in all). Each must be published exactly once: take a review off the queue only after the "+
				"store took it, and keep every one it did not.", reviews, flaky, lost, doubled, stored)
		}
	})
}

func TestStep4RefusedReviewIsNotDeferred(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Leak: publisherLeak}, func(t *testing.T) {
		l := start(t)
		resp, s, _ := l.submitReview(t, 4, alice, "no-such-restaurant", "Where is it?")
		if code := codeAt(resp, "submitReview"); s.SubmitReview != nil || code != gateway.CodeNotFound {
			t.Fatalf("step 4: a review of a restaurant that does not exist came back with %s (code %s at submitReview); "+
				"want null and %s. Defer only when the store cannot answer, never its own refusal.",
				summary(resp), code, gateway.CodeNotFound)
		}
		time.Sleep(publishWithin)
		require.Zero(t, l.sys.Reviews.Len(), "step 4: a refused review is never stored")
	})
}

func TestStep4DeferredReviewsPublishInOrder(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Leak: publisherLeak}, func(t *testing.T) {
		const reviews = 5
		l := start(t)
		l.breakRoutes(t, answers503.fault, "menu", reviewsRoute)
		var want []string
		for i := range reviews {
			text := fmt.Sprintf("review %d", i+1)
			want = append(want, text)
			if _, s, _ := l.submitReview(t, 4, alice, system.SampleRestaurant, text); s.SubmitReview == nil {
				t.Fatalf("step 4: review %d of %d, submitted while the review store answers 503, was not accepted; "+
					"accept it and publish it later.", i+1, reviews)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(storeDownAfter)
		l.sys.Faults.ClearAll()
		time.Sleep(publishWithin)

		var got []string
		for _, r := range l.sys.Reviews.For(system.SampleRestaurant) {
			got = append(got, r.Text)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step 4: %d reviews were written 100ms apart while the review store was down; %v after it came "+
				"back it held %d of them in this order: %s. Want all %d, oldest first (%s): a deferred review is "+
				"published in the order it was written, so take the oldest from the queue (a FIFO, not a stack).",
				reviews, publishWithin, len(got), strings.Join(quoted(got), ", "), reviews, strings.Join(quoted(want), ", "))
		}
	})
}

// TestStep4NoFallbackForCallerWhoLeft calls the wrappers directly for a
// caller who gives up (its deadline passes, or it cancels) while the
// dependency hangs, with every cache warm: nobody is waiting for a
// fallback, and a review whose writer gave up must not be published
// behind their back.
func TestStep4NoFallbackForCallerWhoLeft(t *testing.T) {
	const patience = 100 * time.Millisecond // less than every budget
	leavings := []struct {
		how   string
		leave func() (context.Context, context.CancelFunc)
	}{
		{"whose own deadline passed", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), patience)
		}},
		{"who cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(patience, cancel)
			return ctx, cancel
		}},
	}
	for _, leaving := range leavings {
		t.Run("a caller "+leaving.how, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4, Leak: publisherLeak}, func(t *testing.T) {
				const text = "I gave up waiting"
				l := start(t)
				l.warm(t, 4)
				l.breakRoutes(t, hangs.fault, "menu", restaurantsRoute, menuRoute, recsRoute, popularRoute, reviewsRoute)
				l.breakRoutes(t, hangs.fault, "courier", etaRoute)
				calls := []struct {
					name string
					call func(ctx context.Context) error
				}{
					{"Restaurants", func(ctx context.Context) error { _, err := l.deps.Menu.Restaurants(ctx); return err }},
					{"Menu", func(ctx context.Context) error {
						_, err := l.deps.Menu.Menu(ctx, system.SampleRestaurant)
						return err
					}},
					{"ETA", func(ctx context.Context) error { _, err := l.deps.ETA.ETA(ctx, system.SampleRestaurant); return err }},
					{"Popular", func(ctx context.Context) error { _, err := l.deps.Recs.Popular(ctx); return err }},
					{"Recommendations", func(ctx context.Context) error {
						_, err := l.deps.Recs.Recommendations(ctx, "alice")
						return err
					}},
					{"SubmitReview", func(ctx context.Context) error {
						_, err := l.deps.Reviews.SubmitReview(ctx, fooddelivery.Review{RestaurantID: system.SampleRestaurant,
							User: "alice", Stars: 2, Text: text})
						return err
					}},
				}
				var fellBack []string
				for _, c := range calls {
					ctx, cancel := leaving.leave()
					began := time.Now()
					err := c.call(ctx)
					took := time.Since(began)
					cancel()
					if code, ok := isFallback(err); ok || err == nil {
						fellBack = append(fellBack, fmt.Sprintf("%s answered after %v with code %s", c.name, took, orNone(code)))
					}
				}
				if len(fellBack) > 0 {
					t.Fatalf("step 4: with the menu service, the courier's ETA and the review store hanging, a caller %s "+
						"after %v called each wrapper; %d of %d answered from a fallback: %s. Nobody was waiting for it: "+
						"when the caller's own ctx.Err() is set, return the error (check the ctx you were given, not the "+
						"one you made for the budget).", leaving.how, patience, len(fellBack), len(calls), strings.Join(fellBack, "; "))
				}
				l.sys.Faults.ClearAll()
				time.Sleep(publishWithin)
				if n := l.reviewsWithText(system.SampleRestaurant, text); n != 0 {
					t.Fatalf("step 4: a caller %s after %v submitted a review while the store hung; %v after the store "+
						"came back the review had been stored %d times. Its writer saw an error and may write it again: "+
						"do not defer the review of a caller who left.", leaving.how, patience, publishWithin, n)
				}
			})
		})
	}
}
