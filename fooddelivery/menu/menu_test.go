package menu_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

var replicas = []string{"menu-1", "menu-2", "menu-3"}

type harness struct {
	metrics *metrics.Metrics
	catalog *menu.Catalog
	reviews *menu.ReviewBook
	client  *menu.Client
}

// start serves three menu replicas sharing one catalog and review book on
// an in-memory network, and a client over all three.
func start(t *testing.T) *harness {
	t.Helper()
	n := memnet.New()
	h := &harness{metrics: metrics.NewMetrics(), catalog: menu.DefaultCatalog(), reviews: menu.NewReviewBook()}
	hc := &http.Client{Transport: (&memnet.Dialer{Network: n}).Transport()}
	var urls []string
	var servers []*http.Server
	for _, name := range replicas {
		l, err := n.Listen(name)
		require.NoError(t, err, "listening as %s", name)
		srv := &http.Server{Handler: menu.New(menu.Deps{
			Instance: fooddelivery.NewInstance(name, 10, h.metrics),
			Catalog:  h.catalog,
			Reviews:  h.reviews,
		})}
		go srv.Serve(l)
		servers = append(servers, srv)
		urls = append(urls, memnet.ServiceURL(name))
	}
	h.client = menu.NewClient(hc, urls...)
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		for _, s := range servers {
			s.Close()
		}
		n.Close()
	})
	return h
}

func TestClientSpreadsCallsRoundRobinOverReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)

		for i := range 6 {
			rs, err := h.client.Restaurants(t.Context())
			require.NoError(t, err, "call %d to GET /restaurants", i+1)
			assert.Len(t, rs, 6, "the default catalog has 6 restaurants")
		}

		for _, name := range replicas {
			assert.Equal(t, int64(2), h.metrics.Route(name, "GET /restaurants").Received.Load(),
				"6 calls over 3 replicas: %s must get 2", name)
		}
	})
}

func TestMenuOfEachRestaurantAndNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)

		rs, err := h.client.Restaurants(t.Context())
		require.NoError(t, err, "listing restaurants")
		for _, r := range rs {
			m, err := h.client.Menu(t.Context(), r.ID)
			require.NoError(t, err, "menu of %s", r.ID)
			assert.Equal(t, r.ID, m.RestaurantID, "menu's restaurant id")
			assert.GreaterOrEqual(t, len(m.Dishes), 3, "%s has at least 3 dishes", r.ID)
			assert.LessOrEqual(t, len(m.Dishes), 6, "%s has at most 6 dishes", r.ID)
			assert.False(t, m.Stale, "a menu from the service itself is never stale")
			for _, d := range m.Dishes {
				assert.Positive(t, d.PriceCents, "price of %s in cents", d.ID)
			}
		}

		_, err = h.client.Menu(t.Context(), "no-such-place")
		require.ErrorIs(t, err, fooddelivery.ErrNotFound, "an unknown restaurant is not found")
		var ce *fooddelivery.CallError
		require.True(t, errors.As(err, &ce), "want a *CallError, got %T", err)
		assert.Equal(t, "restaurant_not_found", ce.Code, "error code")
		assert.Equal(t, "menu", ce.Service, "the error names the service")
	})
}

func TestPriceChangesAreServedByEveryReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		require.True(t, h.catalog.SetPrice("luigis", "luigis-margherita", 1999), "the margherita exists")

		for _, name := range replicas {
			m, err := h.client.Menu(t.Context(), "luigis")
			require.NoError(t, err, "menu of luigis")
			assert.Equal(t, 1999, m.Dishes[0].PriceCents, "the shared catalog's new price, served by one of %v", name)
		}
	})
}

func TestRecommendationsArePersonalAndStable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)

		first, err := h.client.Recommendations(t.Context(), "alice")
		require.NoError(t, err, "recommendations for alice")
		again, err := h.client.Recommendations(t.Context(), "alice")
		require.NoError(t, err, "recommendations for alice again (another replica)")
		assert.Len(t, first, 3, "three picks")
		assert.Equal(t, first, again, "the same user gets the same picks from every replica")

		popular, err := h.client.Popular(t.Context())
		require.NoError(t, err, "popular dishes")
		assert.Len(t, popular, 6, "one popular dish per restaurant")

		_, err = h.client.Recommendations(t.Context(), "")
		assert.ErrorIs(t, err, fooddelivery.ErrRejected, "recommendations without a user are a bad request")
	})
}

func TestReviewsAreValidatedAndSharedByReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)

		got, err := h.client.SubmitReview(t.Context(), fooddelivery.Review{RestaurantID: "sakura", User: "bob", Stars: 5, Text: "Great ramen."})
		require.NoError(t, err, "a valid review is stored")
		assert.NotEmpty(t, got.ID, "a stored review gets an id")

		list, err := h.client.Reviews(t.Context(), "sakura") // the next replica
		require.NoError(t, err, "listing sakura's reviews")
		assert.Equal(t, []fooddelivery.Review{got}, list, "every replica sees the shared review book")

		bad := []struct {
			name string
			r    fooddelivery.Review
			want error
		}{
			{"zero stars", fooddelivery.Review{RestaurantID: "sakura", User: "bob", Stars: 0}, fooddelivery.ErrRejected},
			{"six stars", fooddelivery.Review{RestaurantID: "sakura", User: "bob", Stars: 6}, fooddelivery.ErrRejected},
			{"2001 characters", fooddelivery.Review{RestaurantID: "sakura", User: "bob", Stars: 3, Text: strings.Repeat("é", 2001)}, fooddelivery.ErrRejected},
			{"no user", fooddelivery.Review{RestaurantID: "sakura", Stars: 3}, fooddelivery.ErrRejected},
			{"an unknown restaurant", fooddelivery.Review{RestaurantID: "nowhere", User: "bob", Stars: 3}, fooddelivery.ErrNotFound},
		}
		for _, tc := range bad {
			_, err := h.client.SubmitReview(t.Context(), tc.r)
			assert.ErrorIs(t, err, tc.want, "a review with %s", tc.name)
		}
		_, err = h.client.SubmitReview(t.Context(), fooddelivery.Review{RestaurantID: "sakura", User: "bob", Stars: 1, Text: strings.Repeat("é", 2000)})
		assert.NoError(t, err, "exactly 2000 characters is allowed")
		assert.Equal(t, 2, h.reviews.Len(), "only the two valid reviews are stored")
	})
}

func TestUnknownRestaurantIsEchoedTruncated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		id := strings.Repeat("r", 50_000)

		_, err := h.client.Menu(t.Context(), id)

		require.ErrorIs(t, err, fooddelivery.ErrNotFound, "a restaurant that does not exist")
		var ce *fooddelivery.CallError
		require.True(t, errors.As(err, &ce), "want a *fooddelivery.CallError, got %T", err)
		assert.Contains(t, ce.Message, "no restaurant", "the message says what is missing")
		assert.Contains(t, ce.Message, "(50000 bytes)", "and how long the id was")
		assert.Less(t, len(ce.Message), 200, "the id comes back truncated: %s", ce.Message)
	})
}

// A review book keeps the MaxReviews most recent reviews.
func TestReviewBookIsBounded(t *testing.T) {
	b := menu.NewReviewBook()
	for i := range menu.MaxReviews + 5 {
		b.Add(fooddelivery.Review{RestaurantID: "luigis", User: "alice", Stars: 1 + i%5})
	}
	assert.Equal(t, menu.MaxReviews, b.Len())
	got := b.For("luigis")
	assert.Len(t, got, menu.MaxReviews)
	assert.Equal(t, "rev-6", got[0].ID, "the 5 oldest were dropped")
}
