package fooddelivery

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxQuotedBytes is how much of a client's value Quote keeps: 64 bytes.
const MaxQuotedBytes = 64

// Quote returns s quoted for an error message that echoes client input:
// strconv.Quote of s when s is at most MaxQuotedBytes bytes long, and
// otherwise strconv.Quote of its first bytes, cut at the last rune boundary
// at or before MaxQuotedBytes, followed by "..." and the length of the
// whole value in bytes, so that a 900 KB id cannot make a 900 KB error.
// Quote("luigis") is "luigis" with its quotes; Quote of 10,000 x's is 64
// x's between quotes, then "... (10000 bytes)". The result is at most
// 4*MaxQuotedBytes+40 bytes long (each kept byte escapes to at most 4).
//
// Invalid UTF-8 is escaped byte by byte, as strconv.Quote does, and a
// byte that is not valid UTF-8 counts as one rune when cutting. Every
// service of the system quotes client input with Quote, never with %q or
// strconv.Quote.
func Quote(s string) string {
	if len(s) <= MaxQuotedBytes {
		return strconv.Quote(s)
	}
	cut := 0
	for cut < len(s) {
		_, size := utf8.DecodeRuneInString(s[cut:])
		if cut+size > MaxQuotedBytes {
			break
		}
		cut += size
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// CheckIdempotencyKey checks the value of a HeaderIdempotencyKey header.
// "" means the request carries no key and is accepted. Otherwise the key
// must be at most MaxIdempotencyKeyLen bytes of printable ASCII (space
// through '~', so no control characters, tabs or non-ASCII bytes) and not
// only spaces. The error states the rule that v breaks and quotes v (with
// Quote); the payment service answers it with 400
// "idempotency_key_invalid".
func CheckIdempotencyKey(v string) error {
	return checkHeaderValue(HeaderIdempotencyKey, v, MaxIdempotencyKeyLen)
}

// CheckRequestID checks the value of a HeaderRequestID header by the same
// rule as CheckIdempotencyKey, with MaxRequestIDLen bytes at most: ""
// (no id) is accepted; otherwise printable ASCII, not only spaces, at most
// MaxRequestIDLen bytes. The error states the rule and quotes id (with
// Quote). The gateway refuses a request whose id breaks the rule;
// Instance.Route replaces such an id with a fresh one.
func CheckRequestID(id string) error {
	return checkHeaderValue(HeaderRequestID, id, MaxRequestIDLen)
}

// checkHeaderValue applies the shared rule of CheckIdempotencyKey and
// CheckRequestID to the value v of header name.
func checkHeaderValue(name, v string, maxLen int) error {
	if v == "" {
		return nil
	}
	if len(v) > maxLen {
		return fmt.Errorf("%s must be at most %d bytes long; got %d bytes: %s", name, maxLen, len(v), Quote(v))
	}
	blank := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < ' ' || c > '~' {
			return fmt.Errorf("%s may hold only printable ASCII characters (space to '~'); the byte at offset %d of %s is 0x%02x",
				name, i, Quote(v), c)
		}
		if c != ' ' {
			blank = false
		}
	}
	if blank {
		return fmt.Errorf("%s must not be only spaces; got %s (%d spaces): send a value with something in it, or no header at all", name, Quote(v), len(v))
	}
	return nil
}
