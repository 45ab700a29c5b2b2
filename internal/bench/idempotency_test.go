package bench

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/payment"
	idempotency "github.com/gophereats/resilience/solutions/08-idempotency"
)

// The idempotency key store of lab 08, alone: a charge with a new key
// (Begin, then Finish with the outcome) and a repeat of a completed one
// (Begin replays the stored outcome). The store reads time.Now, and keys
// live for 24 hours, so nothing expires while a benchmark runs. Both keep
// storeKeys keys at most in a store, the size KeyStoreFill measures.
const storeKeys = 100_000

// charge is what one stored key holds: the request and a 201 with the
// charge's JSON, the size of the payment service's answer.
var (
	chargeRequest = fooddelivery.ChargeRequest{OrderID: "order-0000042", AmountCents: 2350, Card: "4242 4242 4242 4242"}
	chargeOutcome = payment.Outcome{Status: http.StatusCreated, Body: mustJSON(fooddelivery.Charge{
		ID: "ch_0000042", OrderID: "order-0000042", AmountCents: 2350, Status: "succeeded"})}
)

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// chargeKey returns the idempotency key of request n of goroutine g, in the
// shape ChargeKey gives the order service's keys. Building it costs one
// allocation, as a key read from a request does.
func chargeKey(buf []byte, g, n int) ([]byte, string) {
	buf = append(buf[:0], "order-service/charge/order-"...)
	buf = strconv.AppendInt(buf, int64(g), 10)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, int64(n), 10)
	return buf, string(buf)
}

// charge runs one new key through s: Begin reserves it, Finish stores the
// outcome. It returns what went wrong, or "".
func charge(s *idempotency.KeyStore, key string) string {
	o, err := s.Begin(key, chargeRequest)
	if err != nil || o != nil {
		return "Begin of a new key returned (" + describe(o) + ", " + errString(err) + "), want (nil, nil): reserved"
	}
	s.Finish(key, chargeOutcome)
	return ""
}

// replay asks s for a completed key. It returns what went wrong, or "".
func replay(s *idempotency.KeyStore, key string) string {
	o, err := s.Begin(key, chargeRequest)
	if err != nil || o == nil || o.Status != chargeOutcome.Status || len(o.Body) != len(chargeOutcome.Body) {
		return "Begin of a completed key returned (" + describe(o) + ", " + errString(err) + "), want the stored 201"
	}
	return ""
}

func describe(o *payment.Outcome) string {
	if o == nil {
		return "nil"
	}
	return "status " + strconv.Itoa(o.Status) + " with " + strconv.Itoa(len(o.Body)) + " bytes"
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func BenchmarkKeyStore(b *testing.B) {
	b.Run("op=new", func(b *testing.B) {
		alone(b, func(b *testing.B) {
			s := idempotency.NewKeyStore()
			var buf []byte
			var key string
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i > 0 && i%storeKeys == 0 {
					s = idempotency.NewKeyStore() // keep the store at storeKeys keys at most
				}
				buf, key = chargeKey(buf, 0, i)
				if msg := charge(s, key); msg != "" {
					b.Fatalf("reference key store, charge %d: %s", i, msg)
				}
				i++
			}
		})
	})
	b.Run("op=replay", func(b *testing.B) {
		alone(b, func(b *testing.B) {
			s, keys := filledStore(b)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if msg := replay(s, keys[i%len(keys)]); msg != "" {
					b.Fatalf("reference key store, repeat %d: %s", i, msg)
				}
				i++
			}
		})
	})
}

func BenchmarkKeyStoreParallel(b *testing.B) {
	b.Run("op=new", func(b *testing.B) {
		alone(b, func(b *testing.B) {
			var store atomic.Pointer[idempotency.KeyStore]
			store.Store(idempotency.NewKeyStore())
			n := parallel(b, func(g int, pb *testing.PB) int {
				var buf []byte
				var key string
				i := 0
				for ; pb.Next(); i++ {
					// Keys never repeat (goroutine, number), so a store may be
					// swapped under a goroutine still using the old one.
					if i > 0 && i%storeKeys == 0 {
						store.Store(idempotency.NewKeyStore())
					}
					buf, key = chargeKey(buf, g, i)
					if msg := charge(store.Load(), key); msg != "" {
						b.Errorf("reference key store, charge %d of goroutine %d: %s", i, g, msg)
						break
					}
				}
				return i
			})
			ran(b, "reference key store: a new key was charged", n)
		})
	})
	b.Run("op=replay", func(b *testing.B) {
		alone(b, func(b *testing.B) {
			s, keys := filledStore(b)
			n := parallel(b, func(g int, pb *testing.PB) int {
				i := 0
				for ; pb.Next(); i++ {
					if msg := replay(s, keys[(i+g*7919)%len(keys)]); msg != "" {
						b.Errorf("reference key store, repeat %d of goroutine %d: %s", i, g, msg)
						break
					}
				}
				return i
			})
			ran(b, "reference key store: a completed key was replayed", n)
		})
	})
}

// filledStore returns a store holding storeKeys completed keys, and the keys.
func filledStore(b *testing.B) (*idempotency.KeyStore, []string) {
	s := idempotency.NewKeyStore()
	keys := make([]string, storeKeys)
	var buf []byte
	for i := range keys {
		buf, keys[i] = chargeKey(buf, 0, i)
		if msg := charge(s, keys[i]); msg != "" {
			b.Fatalf("reference key store, filling charge %d: %s", i, msg)
		}
	}
	return s, keys
}

// BenchmarkKeyStoreFill fills a store with storeKeys new keys per
// iteration, and reports the heap the filled store holds per key
// (bytes/key): the key, the request and the outcome as stored, and the
// store's own maps and lists, measured as the live heap after a
// collection, with the store, minus before it. ns/op, B/op and allocs/op
// are for the whole fill.
func BenchmarkKeyStoreFill(b *testing.B) {
	b.Run("keys="+strconv.Itoa(storeKeys), func(b *testing.B) {
		alone(b, func(b *testing.B) {
			b.ReportAllocs()
			var held uint64
			var before, after runtime.MemStats
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				s := idempotency.NewKeyStore()
				var buf []byte
				var key string
				for k := range storeKeys {
					buf, key = chargeKey(buf, i, k)
					if msg := charge(s, key); msg != "" {
						b.Fatalf("reference key store, charge %d: %s", k, msg)
					}
				}
				b.StopTimer()
				buf = nil
				runtime.GC()
				runtime.ReadMemStats(&after)
				if got := s.Len(); got != storeKeys {
					b.Fatalf("reference key store: holds %d keys after %d charges, want all %d", got, storeKeys, storeKeys)
				}
				runtime.KeepAlive(s)
				held += after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
				b.StartTimer()
			}
			b.ReportMetric(float64(held)/float64(b.N)/storeKeys, "bytes/key")
		})
	})
}
