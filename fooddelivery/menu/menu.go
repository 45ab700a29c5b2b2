// Package menu is the menu service of the food-delivery system:
// restaurants, menus, recommendations, the popular-dishes list and
// reviews. It runs as several replicas ("menu-1", "menu-2", "menu-3"),
// each a New handler with its own Instance, all sharing one Catalog and one
// ReviewBook.
package menu

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/gophereats/resilience/fooddelivery"
)

// Deps is everything one menu replica needs.
type Deps struct {
	// Instance names the replica ("menu-1") and carries its metrics,
	// concurrency limit and fault hook; every route is wrapped by
	// Instance.Route. Required.
	Instance *fooddelivery.Instance
	// Catalog holds restaurants and menus, shared by the replicas.
	// Required.
	Catalog *Catalog
	// Reviews stores reviews, shared by the replicas. Required.
	Reviews *ReviewBook
}

// New returns the handler of one menu replica:
//
//	GET  /restaurants               200 []Restaurant
//	GET  /restaurants/{id}/menu     200 Menu; 404 "restaurant_not_found"
//	GET  /restaurants/{id}/reviews  200 []Review; 404 "restaurant_not_found"
//	GET  /recommendations?user=     200 []Dish (personal picks); 400 "bad_request" without user
//	GET  /popular                   200 []Dish
//	POST /reviews                   Review -> 201 Review with its id; 400 "invalid_review"
//	                                (no user, stars outside 1..5, text over MaxReviewChars);
//	                                404 "restaurant_not_found"
//
// POST /reviews takes the user from fooddelivery.HeaderUser when present
// (the gateway's authenticated user), else from the body. New panics if a
// dependency is nil (a wiring error).
func New(d Deps) http.Handler {
	if d.Instance == nil || d.Catalog == nil || d.Reviews == nil {
		panic("menu: New needs Deps.Instance, Deps.Catalog and Deps.Reviews")
	}
	r := chi.NewRouter()
	routes(r, d)
	return r
}

func routes(r chi.Router, d Deps) {
	in := d.Instance
	r.Method("GET", "/restaurants", in.Route("GET /restaurants", handleRestaurants(d.Catalog)))
	r.Method("GET", "/restaurants/{id}/menu", in.Route("GET /restaurants/{id}/menu", handleMenu(d.Catalog)))
	r.Method("GET", "/restaurants/{id}/reviews", in.Route("GET /restaurants/{id}/reviews", handleReviews(d.Catalog, d.Reviews)))
	r.Method("GET", "/recommendations", in.Route("GET /recommendations", handleRecommendations(d.Catalog)))
	r.Method("GET", "/popular", in.Route("GET /popular", handlePopular(d.Catalog)))
	r.Method("POST", "/reviews", in.Route("POST /reviews", handleSubmitReview(d.Catalog, d.Reviews)))
}

func handleRestaurants(c *Catalog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fooddelivery.WriteJSON(w, http.StatusOK, c.Restaurants())
	})
}

func handleMenu(c *Catalog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		m, ok := c.Menu(id)
		if !ok {
			fooddelivery.WriteError(w, http.StatusNotFound, "restaurant_not_found", "no restaurant "+fooddelivery.Quote(id))
			return
		}
		fooddelivery.WriteJSON(w, http.StatusOK, m)
	})
}

func handleReviews(c *Catalog, b *ReviewBook) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if _, ok := c.Menu(id); !ok {
			fooddelivery.WriteError(w, http.StatusNotFound, "restaurant_not_found", "no restaurant "+fooddelivery.Quote(id))
			return
		}
		fooddelivery.WriteJSON(w, http.StatusOK, b.For(id))
	})
}

func handleRecommendations(c *Catalog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.URL.Query().Get("user")
		if user == "" {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "query parameter user is required")
			return
		}
		fooddelivery.WriteJSON(w, http.StatusOK, nonNil(c.Recommendations(user)))
	})
}

func handlePopular(c *Catalog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fooddelivery.WriteJSON(w, http.StatusOK, nonNil(c.Popular()))
	})
}

func handleSubmitReview(c *Catalog, b *ReviewBook) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev fooddelivery.Review
		if err := fooddelivery.ReadJSON(w, r, &rev); err != nil {
			fooddelivery.WriteError(w, http.StatusBadRequest, "invalid_review", "body is not a JSON review: "+err.Error())
			return
		}
		if u := r.Header.Get(fooddelivery.HeaderUser); u != "" {
			rev.User = u
		}
		if why := validateReview(rev); why != "" {
			fooddelivery.WriteError(w, http.StatusBadRequest, "invalid_review", why)
			return
		}
		if _, ok := c.Menu(rev.RestaurantID); !ok {
			fooddelivery.WriteError(w, http.StatusNotFound, "restaurant_not_found", "no restaurant "+fooddelivery.Quote(rev.RestaurantID))
			return
		}
		fooddelivery.WriteJSON(w, http.StatusCreated, b.Add(rev))
	})
}

func nonNil(d []fooddelivery.Dish) []fooddelivery.Dish {
	if d == nil {
		return []fooddelivery.Dish{}
	}
	return d
}

func itoa(n int) string { return strconv.Itoa(n) }
