package fooddelivery

import (
	"hash/fnv"
	"math"
	"strconv"
)

// Draw returns a number in [0, 1) that depends only on its arguments: the
// same (seed, key, attempt) always gives the same number, whatever the
// goroutine scheduling. Faults and experiments use it instead of a shared
// random sequence, so that each request's fate is fixed in advance
// whatever order goroutines woken at the same virtual instant run in. key
// is usually a request id; attempt separates the
// draws of a request's retries.
func Draw(seed int64, key string, attempt int) float64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(uint64(seed) >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(attempt)))
	x := mix64(h.Sum64())
	return float64(x>>11) / (1 << 53)
}

// DrawNormal returns a standard normal variate (mean 0, deviation 1) that
// depends only on its arguments (Box-Muller over two Draws).
func DrawNormal(seed int64, key string, attempt int) float64 {
	u1 := Draw(seed, key, 2*attempt)
	u2 := Draw(seed, key, 2*attempt+1)
	if u1 < 1e-300 {
		u1 = 1e-300
	}
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// mix64 is the SplitMix64 finaliser (Steele, Lea, Flood 2014): it spreads
// FNV's weak low bits over the whole word.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}
