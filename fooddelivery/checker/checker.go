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
//	rep, err := checker.Check(ctx, acks, checker.LocalStore{Ledger: sys.Ledger, Orders: sys.Store}, checker.Options{Settle: 3 * time.Second})
//	fmt.Println(rep)                  // checker: 412 checkouts answered placed, ...: 0 double charges, 0 lost paid orders, 0 reused ids
package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
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

// Presence says whether the order service still has an order.
type Presence int

const (
	// Kept: the order service has the order.
	Kept Presence = iota
	// Missing: the order service has no such order, and never dropped it.
	Missing
	// NoLongerKept: the order service dropped the order to stay within
	// its bound (the 20,000 most recent): it can no longer be judged.
	NoLongerKept
)

// Ledger is what payment's ledger holds: the number of charges per order
// id, and whether it is at its bound (the 20,000 most recent charges), so
// that an order's older charge may have been dropped.
type Ledger struct {
	Charges map[string]int `json:"charges"`
	Full    bool           `json:"full"`
}

// Store reads what the system stored, on a path no injected fault and no
// Toxiproxy link lies on: what it reads is the truth the check stands on.
type Store interface {
	// ReadLedger returns payment's ledger.
	ReadLedger(ctx context.Context) (Ledger, error)
	// ReadOrder returns the status of order id as the order service has it
	// (fooddelivery.OrderPlaced, ...) when it is Kept.
	ReadOrder(ctx context.Context, id string) (status string, p Presence, err error)
}

// Options tune Check.
type Options struct {
	// Settle is how long a charged order that the order service does not
	// have as placed gets before it is looked up once more (a checkout
	// still in flight has its charge and no order yet); 0 looks once.
	Settle time.Duration
	// ThisRun, when set, says whether an order id was given in this run
	// of the system; the charges of other ids (an earlier run on the same
	// -data folder) are counted in EarlierRuns and not judged. nil judges
	// every charge.
	ThisRun func(orderID string) bool
}

// Report is what Check found. The lists hold at most 10 ids each; the
// counts are whole.
type Report struct {
	// Placed counts the checkouts answered as placed (the kept ones, at
	// most MaxAcks).
	Placed int `json:"placed"`
	// Charged counts the orders of this run payment's ledger has a
	// charge for.
	Charged int `json:"charged"`
	// DoubleCharges counts the orders charged more than once: a second
	// charge for one order (a retry without a kept idempotency key, or a
	// charge sent by someone else for the same order).
	DoubleCharges    int      `json:"doubleCharges"`
	DoubleChargedIDs []string `json:"doubleChargedIds"`
	// LostPaidOrders counts the checkouts answered as placed whose order
	// the order service does not have, though it never dropped it, or has
	// without a charge in a ledger that dropped none.
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
	// Unjudged counts the orders that can no longer be judged: the order
	// service dropped them to stay within its bound, or payment's ledger
	// is full and may have dropped their charge. They are neither lost
	// nor owed a refund as far as the checker can know.
	Unjudged    int      `json:"unjudged"`
	UnjudgedIDs []string `json:"unjudgedIds"`
	// EarlierRuns counts the orders charged under ids of an earlier run
	// (Options.ThisRun), not judged.
	EarlierRuns int `json:"earlierRuns"`
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
	if r.Unjudged > 0 {
		fmt.Fprintf(&b, "; %d no longer judged (dropped to stay within the stores' bounds)", r.Unjudged)
	}
	if r.EarlierRuns > 0 {
		fmt.Fprintf(&b, "; %d orders of earlier runs not judged", r.EarlierRuns)
	}
	if r.DoubleCharges > 0 {
		fmt.Fprintf(&b, "; DOUBLE CHARGES (%s): one order was charged twice, as a retry does when the charge has no idempotency key that payment keeps across a restart",
			listed(r.DoubleChargedIDs, r.DoubleCharges))
	}
	if r.LostPaidOrders > 0 {
		fmt.Fprintf(&b, "; LOST (%s): a customer was told the order is placed, and it is gone or unpaid", listed(r.LostIDs, r.LostPaidOrders))
	}
	if r.ReusedIDs > 0 {
		fmt.Fprintf(&b, "; REUSED (%s): two customers were given the same order id", listed(r.ReusedIDList, r.ReusedIDs))
	}
	return b.String()
}

// listed joins the first ids of a finding of n, and says how many more
// there are.
func listed(ids []string, n int) string {
	s := strings.Join(ids, ", ")
	if more := n - len(ids); more > 0 {
		s += fmt.Sprintf(" and %d more; GET /admin/check lists the first %d", more, maxListed)
	}
	return s
}

// Check compares acks with what st stored. It returns an error, and no
// report, when the ledger or an order cannot be read (a service down or
// restarting: check again once it is back).
func Check(ctx context.Context, acks *Acks, st Store, o Options) (Report, error) {
	ids, reused, nReused := acks.snapshot()
	ledger, err := st.ReadLedger(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("checker: payment's ledger: %w", err)
	}
	charges := map[string]int{}
	r := Report{Placed: len(ids), ReusedIDs: nReused, ReusedIDList: reused}
	for id, n := range ledger.Charges {
		if o.ThisRun != nil && !o.ThisRun(id) {
			r.EarlierRuns++
			continue
		}
		charges[id] = n
	}
	r.Charged = len(charges)
	list := func(to *[]string, id string) {
		if len(*to) < maxListed {
			*to = append(*to, id)
		}
	}
	unjudged := func(id string) {
		r.Unjudged++
		list(&r.UnjudgedIDs, id)
	}
	acked := map[string]bool{}
	for _, id := range ids {
		acked[id] = true
		status, p, err := st.ReadOrder(ctx, id)
		switch {
		case err != nil:
			return Report{}, fmt.Errorf("checker: order %s: %w", id, err)
		case p == NoLongerKept:
			unjudged(id)
		case p == Kept && status == fooddelivery.OrderPlaced && charges[id] == 0 && ledger.Full:
			unjudged(id) // its charge may be one the full ledger dropped
		case p != Kept || status != fooddelivery.OrderPlaced || charges[id] == 0:
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
			status, p, err := st.ReadOrder(ctx, id)
			switch {
			case err != nil:
				return Report{}, fmt.Errorf("checker: order %s: %w", id, err)
			case p == NoLongerKept:
				unjudged(id)
			case p != Kept || status != fooddelivery.OrderPlaced:
				again = append(again, id)
			}
		}
		unplaced = again
		if pass == 1 || len(unplaced) == 0 || o.Settle <= 0 {
			break
		}
		// A checkout still in flight has its charge and no order yet.
		select {
		case <-ctx.Done():
			return Report{}, fmt.Errorf("checker: %w", ctx.Err())
		case <-time.After(o.Settle):
		}
	}
	r.ChargedNotPlaced = len(unplaced)
	for _, id := range unplaced {
		list(&r.ChargedNotPlacedIDs, id)
	}
	return r, nil
}

// The paths where ServeStore answers, on a process's admin address
// (outside its routes, so that no injected fault applies to them).
const (
	LedgerPath = "/admin/ledger" // GET: a Ledger
	OrderPath  = "/admin/order"  // GET ?id=: {"status", "presence": "kept"|"missing"|"no-longer-kept"}
)

// LocalStore reads payment's ledger and the order service's orders in
// this process. A nil field answers an error that names what is missing.
type LocalStore struct {
	Ledger *payment.Ledger
	Orders *order.Store
}

// ReadLedger implements Store.
func (s LocalStore) ReadLedger(context.Context) (Ledger, error) {
	if s.Ledger == nil {
		return Ledger{}, errors.New("payment's ledger is not in this process")
	}
	charges := s.Ledger.Charges()
	per := map[string]int{}
	for _, c := range charges {
		per[c.OrderID]++
	}
	max := s.Ledger.Max
	if max <= 0 {
		max = payment.DefaultMaxCharges
	}
	return Ledger{Charges: per, Full: len(charges) >= max}, nil
}

// ReadOrder implements Store.
func (s LocalStore) ReadOrder(_ context.Context, id string) (string, Presence, error) {
	if s.Orders == nil {
		return "", Missing, errors.New("the order service's orders are not in this process")
	}
	if o, ok := s.Orders.Get(id); ok {
		return o.Status, Kept, nil
	}
	if s.Orders.Expired(id) {
		return "", NoLongerKept, nil
	}
	return "", Missing, nil
}

// presenceNames are Presence's names on the wire.
var presenceNames = map[Presence]string{Kept: "kept", Missing: "missing", NoLongerKept: "no-longer-kept"}

// orderAnswer is OrderPath's answer.
type orderAnswer struct {
	Status   string `json:"status,omitempty"`
	Presence string `json:"presence"`
}

// ServeStore answers LedgerPath and OrderPath from st, for another
// process's HTTPStore; anything else is 404.
func ServeStore(st LocalStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			fooddelivery.WriteError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.URL.Path+" is read with GET")
			return
		}
		switch r.URL.Path {
		case LedgerPath:
			l, err := st.ReadLedger(r.Context())
			if err != nil {
				fooddelivery.WriteError(w, http.StatusNotFound, "not_here", err.Error())
				return
			}
			fooddelivery.WriteJSON(w, http.StatusOK, l)
		case OrderPath:
			id := r.URL.Query().Get("id")
			if id == "" {
				fooddelivery.WriteError(w, http.StatusBadRequest, "bad_query", "give the order's id: ?id=ord-...")
				return
			}
			status, p, err := st.ReadOrder(r.Context(), id)
			if err != nil {
				fooddelivery.WriteError(w, http.StatusNotFound, "not_here", err.Error())
				return
			}
			fooddelivery.WriteJSON(w, http.StatusOK, orderAnswer{Status: status, Presence: presenceNames[p]})
		default:
			fooddelivery.WriteError(w, http.StatusNotFound, "not_found", "the checker's paths are "+LedgerPath+" and "+OrderPath)
		}
	})
}

// HTTPStore reads another process's ServeStore: payment's ledger at
// Payment+LedgerPath and the orders at Order+OrderPath, over Client, which
// must bound each request's time and must not pass through a Toxiproxy
// link (dial the processes' own addresses).
type HTTPStore struct {
	Client *http.Client
	// Payment and Order are the processes' base URLs
	// ("http://127.0.0.1:9103").
	Payment, Order string
	// PaymentHost and OrderHost, when set, are the Host header of the
	// requests to each (a process's admin guard wants its loopback name).
	PaymentHost, OrderHost string
}

// ReadLedger implements Store.
func (s HTTPStore) ReadLedger(ctx context.Context) (Ledger, error) {
	var l Ledger
	err := s.get(ctx, s.Payment+LedgerPath, s.PaymentHost, &l)
	return l, err
}

// ReadOrder implements Store.
func (s HTTPStore) ReadOrder(ctx context.Context, id string) (string, Presence, error) {
	var a orderAnswer
	if err := s.get(ctx, s.Order+OrderPath+"?id="+url.QueryEscape(id), s.OrderHost, &a); err != nil {
		return "", Missing, err
	}
	for p, name := range presenceNames {
		if name == a.Presence {
			return a.Status, p, nil
		}
	}
	return "", Missing, fmt.Errorf("GET %s: presence %q is none of kept, missing, no-longer-kept", s.Order+OrderPath, a.Presence)
}

// get decodes the JSON at u into v.
func (s HTTPStore) get(ctx context.Context, u, host string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if host != "" {
		req.Host = host
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}
