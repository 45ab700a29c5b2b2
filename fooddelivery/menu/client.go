package menu

import (
	"context"
	"hash/fnv"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/gophereats/resilience/fooddelivery"
)

// Client calls the menu service over HTTP, spreading calls round-robin over
// its replicas. It implements fooddelivery.MenuReader,
// fooddelivery.Recommender and fooddelivery.ReviewStore. It adds no
// timeout, retry or hedge of its own: the http.Client and the context
// decide how long a call may take, and a call goes to exactly one replica.
type Client struct {
	hc   *http.Client
	urls []string
	next atomic.Uint64
}

var (
	_ fooddelivery.MenuReader  = (*Client)(nil)
	_ fooddelivery.Recommender = (*Client)(nil)
	_ fooddelivery.ReviewStore = (*Client)(nil)
)

// NewClient returns a client that sends requests through httpClient (nil
// means http.DefaultClient) to the replicas at baseURLs (for example
// "http://menu-1", "http://menu-2"): a call that carries a request id
// goes to the replica its id and path hash to, any other call to the
// next replica in turn (call n to baseURLs[n % len(baseURLs)]). It panics without a base URL (a wiring
// error).
func NewClient(httpClient *http.Client, baseURLs ...string) *Client {
	if len(baseURLs) == 0 {
		panic("menu: NewClient needs at least one base URL")
	}
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	urls := make([]string, len(baseURLs))
	for i, u := range baseURLs {
		urls[i] = strings.TrimRight(u, "/")
	}
	return &Client{hc: httpClient, urls: urls}
}

// url returns a replica's base URL followed by path: for a call that
// carries a request id (fooddelivery.RequestIDFrom), the replica the id
// and the path hash to (FNV-1a), so that the reads one request fans out
// at the same instant go where they go whatever order they start in;
// for a call without one, the next replica in turn.
func (c *Client) url(ctx context.Context, path string) string {
	var n uint64
	if id := fooddelivery.RequestIDFrom(ctx); id != "" {
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte{0})
		h.Write([]byte(path))
		n = h.Sum64()
	} else {
		n = c.next.Add(1) - 1
	}
	return c.urls[n%uint64(len(c.urls))] + path
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	_, err := fooddelivery.CallJSON(ctx, c.hc, "menu", http.MethodGet, c.url(ctx, path), nil, nil, out)
	return err
}

// Restaurants lists every restaurant (GET /restaurants). Errors are
// *fooddelivery.CallError values wrapping ErrTimeout, ErrUnavailable or
// ErrOverloaded.
func (c *Client) Restaurants(ctx context.Context) ([]fooddelivery.Restaurant, error) {
	var out []fooddelivery.Restaurant
	return out, c.get(ctx, "/restaurants", &out)
}

// Menu returns the menu of restaurant restaurantID (GET
// /restaurants/{id}/menu); an unknown restaurant gives an error wrapping
// ErrNotFound. Other errors are as for Restaurants.
func (c *Client) Menu(ctx context.Context, restaurantID string) (fooddelivery.Menu, error) {
	var m fooddelivery.Menu
	return m, c.get(ctx, "/restaurants/"+url.PathEscape(restaurantID)+"/menu", &m)
}

// Recommendations returns personal picks for user (GET
// /recommendations?user=); an empty user gives an error wrapping
// ErrRejected. Other errors are as for Restaurants.
func (c *Client) Recommendations(ctx context.Context, user string) ([]fooddelivery.Dish, error) {
	var out []fooddelivery.Dish
	return out, c.get(ctx, "/recommendations?user="+url.QueryEscape(user), &out)
}

// Popular returns the popular-dishes list (GET /popular). Errors are as
// for Restaurants.
func (c *Client) Popular(ctx context.Context) ([]fooddelivery.Dish, error) {
	var out []fooddelivery.Dish
	return out, c.get(ctx, "/popular", &out)
}

// Reviews returns the reviews of restaurant restaurantID (GET
// /restaurants/{id}/reviews); an unknown restaurant gives an error
// wrapping ErrNotFound. Other errors are as for Restaurants.
func (c *Client) Reviews(ctx context.Context, restaurantID string) ([]fooddelivery.Review, error) {
	var out []fooddelivery.Review
	return out, c.get(ctx, "/restaurants/"+url.PathEscape(restaurantID)+"/reviews", &out)
}

// SubmitReview stores r (POST /reviews, r.User sent in
// fooddelivery.HeaderUser) and returns it with its id. An invalid review
// gives an error wrapping ErrRejected, an unknown restaurant ErrNotFound;
// other errors are as for Restaurants.
func (c *Client) SubmitReview(ctx context.Context, r fooddelivery.Review) (fooddelivery.Review, error) {
	var h http.Header
	if r.User != "" {
		h = http.Header{fooddelivery.HeaderUser: {r.User}}
	}
	var out fooddelivery.Review
	_, err := fooddelivery.CallJSON(ctx, c.hc, "menu", http.MethodPost, c.url(ctx, "/reviews"), h, r, &out)
	return out, err
}
