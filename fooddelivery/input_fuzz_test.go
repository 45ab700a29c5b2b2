// Fuzzing ReadJSON's errors, which a service puts in its 400 answers.
// Under plain `go test` the seeds below run once each. To fuzz:
//
//	go test -run '^$' -fuzz '^FuzzReadJSON$' -fuzztime 60s -parallel 2 ./fooddelivery/

package fooddelivery_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery"
)

// FuzzReadJSON decodes any body into the order service's input and checks
// the error a client would read: a *fooddelivery.BodyError whose text is
// short, names JSON rather than Go (no Go type, no package, no
// encoding/json prefix) and echoes no more than a quoted 64 bytes.
func FuzzReadJSON(f *testing.F) {
	for _, seed := range []string{
		`{"restaurantId":"luigis","items":[{"dishId":"d","quantity":1}],"card":"tok_visa"}`,
		`{"items":"x"}`, `{"items":[{"quantity":"2"}]}`, `{"items":[{"quantity":1e999}]}`,
		`{"items":[{"quantity":` + strings.Repeat("9", 500) + `}]}`, `[`, `{"card":true}`, `null`, `{"restaurantId":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(string(body)))
		var in fooddelivery.PlaceOrderInput
		err := fooddelivery.ReadJSON(httptest.NewRecorder(), r, &in)
		if err == nil {
			return
		}
		var be *fooddelivery.BodyError
		if !errors.As(err, &be) {
			t.Fatalf("ReadJSON returned %T, not a *BodyError: %v", err, err)
		}
		msg := err.Error()
		if len(msg) > 4*fooddelivery.MaxQuotedBytes+200 {
			t.Fatalf("a %d-byte message for a %d-byte body: %.300s", len(msg), len(body), msg)
		}
		for _, goText := range []string{"Go struct", "of type", "fooddelivery.", "json: ", "[]", "int64"} {
			if strings.Contains(msg, goText) {
				t.Fatalf("the message speaks Go (%q): %s", goText, msg)
			}
		}
	})
}
