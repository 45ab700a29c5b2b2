package fooddelivery_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
)

func TestQuoteKeepsShortValuesWhole(t *testing.T) {
	for _, s := range []string{"", "luigis", "tab\there", strings.Repeat("x", fooddelivery.MaxQuotedBytes), "ünïcödé"} {
		assert.Equal(t, strconv.Quote(s), fooddelivery.Quote(s), "a value of %d bytes is quoted whole", len(s))
	}
}

func TestQuoteTruncatesLongValuesAndSaysHowLong(t *testing.T) {
	got := fooddelivery.Quote(strings.Repeat("x", 900_000))
	assert.Equal(t, strconv.Quote(strings.Repeat("x", fooddelivery.MaxQuotedBytes))+"... (900000 bytes)", got)

	// 'é' is 2 bytes: 63 x's and then an 'é' would end at byte 65, so the
	// cut falls before it rather than in its middle.
	s := strings.Repeat("x", 63) + strings.Repeat("é", 10)
	got = fooddelivery.Quote(s)
	assert.Equal(t, strconv.Quote(strings.Repeat("x", 63))+"... (83 bytes)", got, "the cut is on a rune boundary")

	got = fooddelivery.Quote(strings.Repeat("\x00", 1000))
	assert.True(t, utf8.ValidString(got), "invalid or control bytes come out escaped")
	assert.Contains(t, got, `\x00`)
	assert.LessOrEqual(t, len(got), 4*fooddelivery.MaxQuotedBytes+40, "the result is bounded whatever the input")
	assert.True(t, strings.HasSuffix(got, "... (1000 bytes)"), "got %s", got)
}

func TestCheckIdempotencyKey(t *testing.T) {
	for _, ok := range []string{
		"", // no key
		"order-service/charge/ord-1",
		"8e03978e-40d5-43e8-bc93-6894a57f9324",
		"a key with spaces",
		strings.Repeat("k", fooddelivery.MaxIdempotencyKeyLen),
	} {
		assert.NoError(t, fooddelivery.CheckIdempotencyKey(ok), "key %q is acceptable", ok)
	}
	for _, tc := range []struct {
		name, key string
		says      []string // the error states the rule and the value
	}{
		{"256 bytes", strings.Repeat("k", 256), []string{"at most 255 bytes", "got 256 bytes", `"kkkk`, "(256 bytes)"}},
		{"10,000 bytes", strings.Repeat("k", 10_000), []string{"at most 255 bytes", "(10000 bytes)"}},
		{"only spaces", "   ", []string{"only spaces", `"   "`}},
		{"a tab", "key\tone", []string{"printable ASCII", "offset 3", "0x09", `"key\tone"`}},
		{"a newline", "key\n", []string{"printable ASCII", "0x0a"}},
		{"a DEL", "key\x7f", []string{"printable ASCII", "0x7f"}},
		{"non-ASCII", "clé", []string{"printable ASCII", "offset 2", "0xc3"}},
		{"invalid UTF-8", "k\xff", []string{"printable ASCII", "0xff"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fooddelivery.CheckIdempotencyKey(tc.key)
			require.Error(t, err, "a key with %s breaks the rule", tc.name)
			assert.Contains(t, err.Error(), fooddelivery.HeaderIdempotencyKey, "the error names the header")
			for _, want := range tc.says {
				assert.Contains(t, err.Error(), want)
			}
			assert.Less(t, len(err.Error()), 400, "the error quotes the key truncated: %s", err)
		})
	}
}

func TestCheckRequestID(t *testing.T) {
	assert.NoError(t, fooddelivery.CheckRequestID(""), "no id")
	assert.NoError(t, fooddelivery.CheckRequestID("req-42"))
	assert.NoError(t, fooddelivery.CheckRequestID(strings.Repeat("r", fooddelivery.MaxRequestIDLen)))

	err := fooddelivery.CheckRequestID(strings.Repeat("r", 10_000))
	require.Error(t, err, "a 10,000-byte id is too long")
	assert.Contains(t, err.Error(), fooddelivery.HeaderRequestID+" must be at most 128 bytes long")
	assert.Contains(t, err.Error(), "(10000 bytes)")
	assert.Less(t, len(err.Error()), 300)

	err = fooddelivery.CheckRequestID("req\x01")
	require.Error(t, err, "a control character")
	assert.Contains(t, err.Error(), "printable ASCII")
}

func TestReadJSONDoesNotEchoAHugeNumber(t *testing.T) {
	huge := strings.Repeat("9", 500_000)
	r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"items":[{"dishId":"d1","quantity":`+huge+`}]}`))
	var in fooddelivery.PlaceOrderInput

	err := fooddelivery.ReadJSON(httptest.NewRecorder(), r, &in)

	require.Error(t, err, "500,000 nines do not fit an int")
	assert.Less(t, len(err.Error()), 400, "the number is quoted truncated: %s", err)
	assert.Contains(t, err.Error(), "(500000 bytes)", "the message says how long the number was")
	assert.Contains(t, err.Error(), "quantity", "the message still names the field")
	var te *json.UnmarshalTypeError
	assert.True(t, errors.As(err, &te), "the error is still a *json.UnmarshalTypeError")
}

// ReadJSON's errors say what is wrong in the client's terms: the field's
// JSON name and the JSON it takes, never a Go type or a chain of wraps.
func TestReadJSONSaysWhatIsWrongInJSONTerms(t *testing.T) {
	for _, c := range []struct {
		body, want string
	}{
		{`{"items":"two"}`, `field "items" takes an array, not a string`},
		{`{"items":[{"dishId":"d1","quantity":"2"}]}`, `field "items.quantity" takes a whole number that fits 64 bits, not a string`},
		{`{"items":[{"dishId":"d1","quantity":1e400}]}`, `field "items.quantity" takes a whole number that fits 64 bits, not the number "1e400"`},
		{`[1]`, `the body takes an object, not an array`},
		{`{"items":`, `the body is not valid JSON: unexpected end of JSON input (at byte 9)`},
		{`{x}`, `the body is not valid JSON: invalid character 'x' looking for beginning of object key string (at byte 2)`},
	} {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(c.body))
		var in fooddelivery.PlaceOrderInput
		err := fooddelivery.ReadJSON(httptest.NewRecorder(), r, &in)
		require.Error(t, err, c.body)
		assert.Equal(t, c.want, err.Error(), "the body %s", c.body)
		var be *fooddelivery.BodyError
		assert.True(t, errors.As(err, &be), "a *fooddelivery.BodyError")
	}
	r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(strings.Repeat(" ", fooddelivery.MaxRequestBytes+1)))
	err := fooddelivery.ReadJSON(httptest.NewRecorder(), r, new(fooddelivery.PlaceOrderInput))
	require.Error(t, err)
	assert.Equal(t, "the body is larger than 1048576 bytes", err.Error())
}
