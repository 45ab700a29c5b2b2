package fooddelivery_test

import (
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery"
)

// drawOracle is Draw as it was first written, through hash/fnv: the
// seed's 8 bytes (least significant first), the key, a 0 byte and the
// attempt's decimal digits, then the SplitMix64 finaliser. Draw hashes in
// place for speed and must give exactly its numbers: the experiments'
// tables and the faults' fates are made of them.
func drawOracle(seed int64, key string, attempt int) float64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(uint64(seed) >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(attempt)))
	z := h.Sum64()
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

var (
	drawSeeds    = []int64{0, 1, 2, 6, 7, 42, -1, 1 << 40, math.MaxInt64, math.MinInt64, 0x0123456789abcdef}
	drawAttempts = []int{0, 1, 2, 3, 9, 10, 11, 99, 100, 12345, -1, -10, math.MaxInt, math.MinInt}
	drawKeys     = []string{"", "a", "request-1", "request-12345", "client-7", "eta:r1", "dispatch m-3",
		"customer-99#retry", "order-\x00-zero", "héllo, 世界", strings.Repeat("long key ", 40)}
)

// TestDrawMatchesTheOracle compares Draw, and DrawConcat at every split of
// the key, with the oracle over seeds, keys and attempts, the edges
// included (negative attempts, the extreme seeds, empty and long keys).
func TestDrawMatchesTheOracle(t *testing.T) {
	for _, seed := range drawSeeds {
		for _, key := range drawKeys {
			for _, attempt := range drawAttempts {
				want := drawOracle(seed, key, attempt)
				if got := fooddelivery.Draw(seed, key, attempt); got != want {
					t.Fatalf("Draw(%d, %q, %d) = %v, want the oracle's %v", seed, key, attempt, got, want)
				}
				for i := range len(key) + 1 {
					if got := fooddelivery.DrawConcat(seed, key[:i], key[i:], attempt); got != want {
						t.Fatalf("DrawConcat(%d, %q, %q, %d) = %v, want Draw's %v", seed, key[:i], key[i:], attempt, got, want)
					}
				}
			}
		}
	}
	// Many requests' draws, as lab 03's Transport and the load generator
	// make them.
	for n := range 3000 {
		key := "request-" + strconv.Itoa(n)
		for attempt := 1; attempt <= 3; attempt++ {
			if got, want := fooddelivery.Draw(int64(n%7), key, attempt), drawOracle(int64(n%7), key, attempt); got != want {
				t.Fatalf("Draw(%d, %q, %d) = %v, want the oracle's %v", n%7, key, attempt, got, want)
			}
		}
	}
}

// FuzzDraw checks Draw and DrawConcat against the oracle on any input.
// Under plain go test the seeds below run once each.
func FuzzDraw(f *testing.F) {
	f.Add(int64(0), "request-1", "#retry", 1)
	f.Add(int64(-3), "", "", -7)
	f.Add(int64(math.MinInt64), "héllo", "\x00\xff", math.MaxInt)
	f.Fuzz(func(t *testing.T, seed int64, key1, key2 string, attempt int) {
		want := drawOracle(seed, key1+key2, attempt)
		if got := fooddelivery.Draw(seed, key1+key2, attempt); got != want {
			t.Fatalf("Draw(%d, %q, %d) = %v, want the oracle's %v", seed, key1+key2, attempt, got, want)
		}
		if got := fooddelivery.DrawConcat(seed, key1, key2, attempt); got != want {
			t.Fatalf("DrawConcat(%d, %q, %q, %d) = %v, want the oracle's %v", seed, key1, key2, attempt, got, want)
		}
	})
}

// TestDrawAllocatesNothing: a draw is made per request and per retry, so
// it must not allocate, whatever the key's length and the attempt.
func TestDrawAllocatesNothing(t *testing.T) {
	key := strings.Repeat("order-", 50) + strconv.Itoa(len(drawKeys)) // built at run time, 300 bytes
	var sum float64
	for _, c := range []struct {
		name string
		draw func()
	}{
		{"Draw", func() { sum += fooddelivery.Draw(7, key, 12345) }},
		{"DrawConcat", func() { sum += fooddelivery.DrawConcat(7, key, "#retry", -3) }},
		{"DrawNormal", func() { sum += fooddelivery.DrawNormal(7, key, 100) }},
	} {
		if allocs := testing.AllocsPerRun(100, c.draw); allocs != 0 {
			t.Errorf("%s of a %d-byte key allocates %v times per call, want 0", c.name, len(key), allocs)
		}
	}
	_ = sum
}
