package payment

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
)

// Client calls the payment service over HTTP. It implements
// fooddelivery.Payer. It adds no timeout and no retry of its own: the
// http.Client and the context decide how long a call may take.
type Client struct {
	hc      *http.Client
	baseURL string
}

var _ fooddelivery.Payer = (*Client)(nil)

// NewClient returns a client that sends requests through httpClient (nil
// means http.DefaultClient) to the payment service at baseURL (for example
// "http://payment"; a trailing slash is ignored).
func NewClient(httpClient *http.Client, baseURL string) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{hc: httpClient, baseURL: strings.TrimRight(baseURL, "/")}
}

// Charge asks the payment service to charge req (POST /charges) and returns
// the executed charge. Errors are *fooddelivery.CallError values: a
// declined card wraps ErrRejected with Status 402 and Code
// "card_declined", a card the service does not know (see TestCards) the
// same with Code "card_unknown"; a full service ErrOverloaded; a timeout
// ErrTimeout; an unreachable service or a 5xx ErrUnavailable.
func (c *Client) Charge(ctx context.Context, req fooddelivery.ChargeRequest) (fooddelivery.Charge, error) {
	return c.ChargeWithKey(ctx, req, "", 1)
}

// Charges lists the charges executed for orderID (GET /charges?orderId=);
// an empty orderID lists every charge. Errors are as for Charge.
func (c *Client) Charges(ctx context.Context, orderID string) ([]fooddelivery.Charge, error) {
	u := c.baseURL + "/charges"
	if orderID != "" {
		u += "?orderId=" + url.QueryEscape(orderID)
	}
	var out []fooddelivery.Charge
	_, err := fooddelivery.CallJSON(ctx, c.hc, "payment", http.MethodGet, u, nil, nil, &out)
	return out, err
}
