package fooddelivery

import (
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
//
// The number is the SplitMix64 finaliser of the 64-bit FNV-1a hash of the
// seed's 8 bytes (least significant first), the key, a 0 byte and the
// attempt in decimal, scaled from its top 53 bits. Draw hashes in place:
// it allocates nothing, whatever the key's length.
func Draw(seed int64, key string, attempt int) float64 {
	return drawEnd(fnvString(fnvSeed(seed), key), attempt)
}

// DrawConcat returns Draw(seed, key1+key2, attempt) without building
// key1+key2, so without allocating whatever the keys' lengths: for a key
// made of a call's name and a fixed suffix ("order-17", "#retry") or
// prefix ("request-", "42").
func DrawConcat(seed int64, key1, key2 string, attempt int) float64 {
	return drawEnd(fnvString(fnvString(fnvSeed(seed), key1), key2), attempt)
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

// The 64-bit FNV-1a parameters (Fowler, Noll, Vo; hash/fnv's New64a): a
// byte b updates the hash h to (h ^ b) * fnvPrime.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvSeed returns the FNV-1a hash of seed's 8 bytes, least significant
// first.
func fnvSeed(seed int64) uint64 {
	h := uint64(fnvOffset)
	for shift := 0; shift < 64; shift += 8 {
		h = (h ^ uint64(seed)>>shift&0xff) * fnvPrime
	}
	return h
}

// fnvString continues the FNV-1a hash h over the bytes of s.
func fnvString(h uint64, s string) uint64 {
	for i := range len(s) {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// drawEnd hashes the 0 byte that ends the key and attempt's decimal digits
// into h, and turns the result into a number in [0, 1).
func drawEnd(h uint64, attempt int) float64 {
	h *= fnvPrime // the 0 byte: h ^ 0 is h
	if 0 <= attempt && attempt < 10 {
		h = (h ^ uint64('0'+attempt)) * fnvPrime
	} else {
		var digits [20]byte // the longest int64, "-9223372036854775808"
		for _, d := range strconv.AppendInt(digits[:0], int64(attempt), 10) {
			h = (h ^ uint64(d)) * fnvPrime
		}
	}
	return float64(mix64(h)>>11) / (1 << 53)
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
