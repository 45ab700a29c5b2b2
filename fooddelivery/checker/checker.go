// Package checker holds the system to what it told its customers, after
// the fact and from outside, in the manner of Jepsen's checkers: every
// checkout answered as placed must still be an order the order service
// has, charged exactly once by payment, under an id that no other
// checkout was given. It is how cmd/fooddelivery shows that a crash in
// the middle of a charge lost nothing (-scenario payment-crash,
// GET /admin/check).
//
//	acks := checker.NewAcks()
//	acks.Placed("o-17")               // from every checkout answered PLACED
//	rep, err := checker.Check(ctx, acks, checker.HTTPStore{Client: hc, Payment: "http://payment", Order: "http://order"}, 3*time.Second)
//	fmt.Println(rep)                  // checker: 412 checkouts answered placed, ...: 0 double charges, 0 lost paid orders, 0 reused ids
package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// MaxAcks is how many acknowledged checkouts an Acks keeps, the most
// recent: as many as the order service keeps orders (20,000), so that
// every kept acknowledgement can still be looked up.
const MaxAcks = 20_000

// maxListed is how many ids a Report lists per finding; the counts are
// whole.
const maxListed = 10

// Acks records the order ids of the checkouts that customers were told
// are placed. The zero value is not usable; create one with NewAcks. Its
// methods are safe for concurrent use.
type Acks struct {
	mu     sync.Mutex
	ring   []string       // the kept ids, oldest first until full
	next   int            // ring position of the next id once full
	count  map[string]int // times each kept id was acknowledged
	reused []string       // ids acknowledged twice, first maxListed
	nReuse int
}

// NewAcks returns an empty Acks.
func NewAcks() *Acks { return &Acks{count: map[string]int{}} }

// Placed records that a checkout was answered as placed with order id.
// An id acknowledged a second time is a reused id (an order service that
// lost its counter in a restart hands out ids again). "" is ignored.
func (a *Acks) Placed(id string) {
	if a == nil || id == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.count[id]++; a.count[id] == 2 {
		a.nReuse++
		if len(a.reused) < maxListed {
			a.reused = append(a.reused, id)
		}
	}
	if len(a.ring) < MaxAcks {
		a.ring = append(a.ring, id)
		return
	}
	old := a.ring[a.next]
	if a.count[old]--; a.count[old] == 0 {
		delete(a.count, old)
	}
	a.ring[a.next] = id
	a.next = (a.next + 1) % MaxAcks
}

// snapshot returns the kept ids, each once, oldest first, and the
// reused ids.
func (a *Acks) snapshot() (ids []string, reused []string, nReused int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[string]bool{}
	for _, id := range append(slices.Clone(a.ring[a.next:]), a.ring[:a.next]...) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, slices.Clone(a.reused), a.nReuse
}

// Store reads what the system stored.
type Store interface {
	// Charges returns how many charges payment's ledger holds per order id.
	Charges(ctx context.Context) (map[string]int, error)
	// OrderStatus returns the status of order id as the order service has
	// it (fooddelivery.OrderPlaced, ...), or found false when it has no
	// such order.
	OrderStatus(ctx context.Context, id string) (status string, found bool, err error)
}

// Report is what Check found. The lists hold at most 10 ids each; the
// counts are whole.
type Report struct {
	// Placed counts the checkouts answered as placed (the kept ones, at
	// most MaxAcks).
	Placed int `json:"placed"`
	// Charged counts the orders payment's ledger has a charge for.
	Charged int `json:"charged"`
	// DoubleCharges counts the orders charged more than once: a retry that
	// charged the card again.
	DoubleCharges    int      `json:"doubleCharges"`
	DoubleChargedIDs []string `json:"doubleChargedIds"`
	// LostPaidOrders counts the checkouts answered as placed whose order
	// the order service no longer has, or has without a charge.
	LostPaidOrders int      `json:"lostPaidOrders"`
	LostIDs        []string `json:"lostIds"`
	// ReusedIDs counts the order ids answered to two checkouts.
	ReusedIDs    int      `json:"reusedIds"`
	ReusedIDList []string `json:"reusedIdList"`
	// ChargedNotPlaced counts the orders payment charged that the order
	// service has as not placed (its charge failed as far as it knows, so
	// the customer was told so): money taken for no order, a refund owed.
	// It is not a lost order, and a crash in the middle of a charge makes
	// one whenever the caller's retries end before payment is back.
	ChargedNotPlaced    int      `json:"chargedNotPlaced"`
	ChargedNotPlacedIDs []string `json:"chargedNotPlacedIds"`
}

// OK reports whether the system kept its word: no double charge, no lost
// paid order, no reused id.
func (r Report) OK() bool { return r.DoubleCharges == 0 && r.LostPaidOrders == 0 && r.ReusedIDs == 0 }

// String says the findings in one line, with what each nonzero one means.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "checker: %d checkouts answered placed, %d orders charged: %d double charges, %d lost paid orders, %d reused ids",
		r.Placed, r.Charged, r.DoubleCharges, r.LostPaidOrders, r.ReusedIDs)
	if r.ChargedNotPlaced > 0 {
		fmt.Fprintf(&b, "; %d charged but not placed (a refund owed)", r.ChargedNotPlaced)
	}
	if r.DoubleCharges > 0 {
		fmt.Fprintf(&b, "; DOUBLE CHARGES (%s): a retry charged a card again, so the charge needs an idempotency key that payment keeps across a restart",
			strings.Join(r.DoubleChargedIDs, ", "))
	}
	if r.LostPaidOrders > 0 {
		fmt.Fprintf(&b, "; LOST (%s): a customer was told the order is placed, and it is gone or unpaid", strings.Join(r.LostIDs, ", "))
	}
	if r.ReusedIDs > 0 {
		fmt.Fprintf(&b, "; REUSED (%s): two customers were given the same order id", strings.Join(r.ReusedIDList, ", "))
	}
	return b.String()
}

// Check compares acks with what st stored. A charged order that the order
// service does not have as placed is looked up once more after settle (a
// checkout still in flight has its charge and no order yet; give it the
// longest a checkout takes, 0 to look once). It returns an error, and no
// report, when the ledger or an order cannot be read (a service down or
// restarting: check again once it is back).
func Check(ctx context.Context, acks *Acks, st Store, settle time.Duration) (Report, error) {
	ids, reused, nReused := acks.snapshot()
	charges, err := st.Charges(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("checker: payment's ledger: %w", err)
	}
	r := Report{Placed: len(ids), Charged: len(charges), ReusedIDs: nReused, ReusedIDList: reused}
	list := func(to *[]string, id string) {
		if len(*to) < maxListed {
			*to = append(*to, id)
		}
	}
	acked := map[string]bool{}
	for _, id := range ids {
		acked[id] = true
		status, found, err := st.OrderStatus(ctx, id)
		if err != nil {
			return Report{}, fmt.Errorf("checker: order %s: %w", id, err)
		}
		if !found || status != fooddelivery.OrderPlaced || charges[id] == 0 {
			r.LostPaidOrders++
			list(&r.LostIDs, id)
		}
	}
	charged := make([]string, 0, len(charges))
	for id := range charges {
		charged = append(charged, id)
	}
	slices.Sort(charged)
	var unplaced []string
	for _, id := range charged {
		if charges[id] > 1 {
			r.DoubleCharges++
			list(&r.DoubleChargedIDs, id)
		}
		if !acked[id] {
			unplaced = append(unplaced, id)
		}
	}
	for pass := range 2 {
		var again []string
		for _, id := range unplaced {
			status, found, err := st.OrderStatus(ctx, id)
			if err != nil {
				return Report{}, fmt.Errorf("checker: order %s: %w", id, err)
			}
			if !found || status != fooddelivery.OrderPlaced {
				again = append(again, id)
			}
		}
		unplaced = again
		if pass == 1 || len(unplaced) == 0 || settle <= 0 {
			break
		}
		// A checkout still in flight has its charge and no order yet.
		select {
		case <-ctx.Done():
			return Report{}, fmt.Errorf("checker: %w", ctx.Err())
		case <-time.After(settle):
		}
	}
	r.ChargedNotPlaced = len(unplaced)
	for _, id := range unplaced {
		list(&r.ChargedNotPlacedIDs, id)
	}
	return r, nil
}

// HTTPStore reads payment's ledger (GET /charges) and the order service's
// orders (GET /orders/{id}) over Client, which must bound each request's
// time.
type HTTPStore struct {
	Client *http.Client
	// Payment and Order are the services' base URLs ("http://payment").
	Payment, Order string
	// Host, when set, is the Host header of every request (another
	// process's admin guard wants its loopback name).
	Host string
}

// Charges implements Store.
func (s HTTPStore) Charges(ctx context.Context) (map[string]int, error) {
	var charges []fooddelivery.Charge
	if _, err := s.get(ctx, s.Payment+"/charges", &charges); err != nil {
		return nil, err
	}
	per := map[string]int{}
	for _, c := range charges {
		per[c.OrderID]++
	}
	return per, nil
}

// OrderStatus implements Store.
func (s HTTPStore) OrderStatus(ctx context.Context, id string) (string, bool, error) {
	var o fooddelivery.Order
	found, err := s.get(ctx, s.Order+"/orders/"+url.PathEscape(id), &o)
	return o.Status, found, err
}

// get decodes the JSON at u into v; found is false for a 404.
func (s HTTPStore) get(ctx context.Context, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	if s.Host != "" {
		req.Host = s.Host
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return false, fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return false, fmt.Errorf("GET %s: %w", u, err)
	}
	return true, nil
}
