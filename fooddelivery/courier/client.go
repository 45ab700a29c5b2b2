package courier

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
)

// Client calls the courier service over HTTP. It implements
// fooddelivery.ETAReader and fooddelivery.CourierAssigner. It adds no
// timeout and no retry of its own: the http.Client and the context decide
// how long a call may take.
type Client struct {
	hc      *http.Client
	baseURL string
}

var (
	_ fooddelivery.ETAReader       = (*Client)(nil)
	_ fooddelivery.CourierAssigner = (*Client)(nil)
)

// NewClient returns a client that sends requests through httpClient (nil
// means http.DefaultClient) to the courier service at baseURL (for example
// "http://courier"; a trailing slash is ignored).
func NewClient(httpClient *http.Client, baseURL string) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{hc: httpClient, baseURL: strings.TrimRight(baseURL, "/")}
}

// ETA returns the delivery estimate for restaurantID (GET
// /eta/{restaurantId}). Errors are *fooddelivery.CallError values wrapping
// ErrTimeout, ErrUnavailable or ErrOverloaded.
func (c *Client) ETA(ctx context.Context, restaurantID string) (fooddelivery.ETA, error) {
	var eta fooddelivery.ETA
	_, err := fooddelivery.CallJSON(ctx, c.hc, "courier", http.MethodGet,
		c.baseURL+"/eta/"+url.PathEscape(restaurantID), nil, nil, &eta)
	return eta, err
}

// Assign assigns a courier to orderID (POST /assignments). Assigning an
// order twice returns its existing assignment. Errors are as for ETA, plus
// ErrRejected for an empty orderID or restaurantID.
func (c *Client) Assign(ctx context.Context, orderID, restaurantID string) (fooddelivery.Assignment, error) {
	var a fooddelivery.Assignment
	_, err := fooddelivery.CallJSON(ctx, c.hc, "courier", http.MethodPost, c.baseURL+"/assignments", nil,
		AssignRequest{OrderID: orderID, RestaurantID: restaurantID}, &a)
	return a, err
}

// Row reads a row of the dispatch board (GET /board/{row}). Errors are as
// for ETA.
func (c *Client) Row(ctx context.Context, row string) (Row, error) {
	var r Row
	_, err := fooddelivery.CallJSON(ctx, c.hc, "courier", http.MethodGet, c.baseURL+"/board/"+url.PathEscape(row), nil, nil, &r)
	return r, err
}

// PutRow writes value to a row of the dispatch board if its version is
// still version (PUT /board/{row} with If-Match) and returns the row with
// its new version. When another writer got there first the error wraps
// ErrRejected and IsVersionConflict reports true for it; other errors are
// as for ETA.
func (c *Client) PutRow(ctx context.Context, row string, version int64, value string) (Row, error) {
	var r Row
	h := http.Header{"If-Match": {strconv.FormatInt(version, 10)}}
	_, err := fooddelivery.CallJSON(ctx, c.hc, "courier", http.MethodPut, c.baseURL+"/board/"+url.PathEscape(row), h,
		PutRowRequest{Value: value}, &r)
	return r, err
}

// IsVersionConflict reports whether err is the courier service's answer
// to a write with a stale version (HTTP 409, code "version_conflict"): read
// the row again and retry.
func IsVersionConflict(err error) bool {
	var ce *fooddelivery.CallError
	return errors.As(err, &ce) && ce.Status == http.StatusConflict && ce.Code == "version_conflict"
}
