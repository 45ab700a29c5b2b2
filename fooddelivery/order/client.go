package order

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Client calls the order service over HTTP. It implements
// fooddelivery.OrderService. It adds no timeout and no retry of its own:
// the http.Client and the context decide how long a call may take.
type Client struct {
	hc      *http.Client
	baseURL string
}

var _ fooddelivery.OrderService = (*Client)(nil)

// NewClient returns a client that sends requests through httpClient (nil
// means http.DefaultClient) to the order service at baseURL (for example
// "http://order"; a trailing slash is ignored).
func NewClient(httpClient *http.Client, baseURL string) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{hc: httpClient, baseURL: strings.TrimRight(baseURL, "/")}
}

// PlaceOrder places in for user (POST /orders, user in
// fooddelivery.HeaderUser) and returns the placed order. Errors are
// *fooddelivery.CallError values for service "order" whose Code says which
// dependency failed: a declined or unknown card wraps ErrRejected (402,
// "payment_declined"); a payment or menu timeout ErrTimeout (504,
// "payment_timeout"); an unreachable dependency ErrUnavailable (502);
// an overloaded one ErrOverloaded (503, with DontRetry); an invalid order
// ErrRejected (400, 422); no user ErrUnauthorized. A failure to reach the
// order service itself is classified by fooddelivery.ClassifyTransportError.
func (c *Client) PlaceOrder(ctx context.Context, user string, in fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	var o fooddelivery.Order
	h := http.Header{fooddelivery.HeaderUser: {user}}
	_, err := fooddelivery.CallJSON(ctx, c.hc, "order", http.MethodPost, c.baseURL+"/orders", h, in, &o)
	return o, err
}

// Order returns the order id (GET /orders/{id}); an unknown id gives an
// error wrapping ErrNotFound. Other errors are as for PlaceOrder.
func (c *Client) Order(ctx context.Context, id string) (fooddelivery.Order, error) {
	var o fooddelivery.Order
	_, err := fooddelivery.CallJSON(ctx, c.hc, "order", http.MethodGet, c.baseURL+"/orders/"+url.PathEscape(id), nil, nil, &o)
	return o, err
}

// DailyReport returns the report of the UTC day containing day (GET
// /reports/daily); the zero day means the service's today. Errors are as
// for PlaceOrder.
func (c *Client) DailyReport(ctx context.Context, day time.Time) (DailyReport, error) {
	u := c.baseURL + "/reports/daily"
	if !day.IsZero() {
		u += "?day=" + day.UTC().Format(time.DateOnly)
	}
	var rep DailyReport
	_, err := fooddelivery.CallJSON(ctx, c.hc, "order", http.MethodGet, u, nil, nil, &rep)
	return rep, err
}
