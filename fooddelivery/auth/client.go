package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
)

// Client calls the auth service over HTTP. It implements
// fooddelivery.Authorizer. It adds no timeout and no retry of its own: the
// http.Client and the context decide how long a call may take.
type Client struct {
	hc      *http.Client
	baseURL string
}

var _ fooddelivery.Authorizer = (*Client)(nil)

// NewClient returns a client that sends requests through httpClient (nil
// means http.DefaultClient) to the auth service at baseURL (for example
// "http://auth"; a trailing slash is ignored).
func NewClient(httpClient *http.Client, baseURL string) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{hc: httpClient, baseURL: strings.TrimRight(baseURL, "/")}
}

// Authorize asks the auth service whose token this is (GET /authorize) and
// returns the user. A token the service refuses gives an error wrapping
// fooddelivery.ErrUnauthorized. When the check cannot be made the error
// wraps ErrTimeout, ErrUnavailable or ErrOverloaded instead (an answer
// without a user counts as ErrUnavailable); the user is then always "" and
// the caller must deny the request (fail closed).
func (c *Client) Authorize(ctx context.Context, token string) (string, error) {
	var id Identity
	h := http.Header{"Authorization": {"Bearer " + token}}
	if _, err := fooddelivery.CallJSON(ctx, c.hc, "auth", http.MethodGet, c.baseURL+"/authorize", h, nil, &id); err != nil {
		return "", err
	}
	if id.User == "" {
		return "", &fooddelivery.CallError{Service: "auth", Status: http.StatusOK, Err: fooddelivery.ErrUnavailable,
			Cause: fmt.Errorf("the answer names no user")}
	}
	return id.User, nil
}
