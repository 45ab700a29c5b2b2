// Package auth is the auth check of the food-delivery system: the gateway
// asks it which user a bearer token belongs to before it lets a request
// through.
package auth

import (
	"maps"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/gophereats/resilience/fooddelivery"
)

// Deps is everything the auth service needs.
type Deps struct {
	// Instance names the instance and carries its metrics, concurrency
	// limit and fault hook; every route is wrapped by Instance.Route.
	// Required.
	Instance *fooddelivery.Instance
	// Tokens maps each valid bearer token to its user. New copies it, so
	// later changes to the map have no effect. nil means no token is
	// valid.
	Tokens map[string]string
}

// DefaultTokens returns the workshop's tokens: "tok-alice", "tok-bob" and
// "tok-carol" for the users alice, bob and carol. Each call returns a new
// map.
func DefaultTokens() map[string]string {
	return map[string]string{"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol"}
}

// Identity is the body of a successful GET /authorize.
type Identity struct {
	User string `json:"user"`
}

// New returns the auth service's handler:
//
//	GET /authorize   with Authorization: Bearer <token>
//	                 200 Identity; 401 "unauthorized" (missing, malformed or unknown token,
//	                 with WWW-Authenticate: Bearer)
//
// New panics if d.Instance is nil (a wiring error).
func New(d Deps) http.Handler {
	if d.Instance == nil {
		panic("auth: New needs Deps.Instance")
	}
	tokens := maps.Clone(d.Tokens)
	r := chi.NewRouter()
	routes(r, d.Instance, tokens)
	return r
}

func routes(r chi.Router, in *fooddelivery.Instance, tokens map[string]string) {
	r.Method("GET", "/authorize", in.Route("GET /authorize", handleAuthorize(tokens)))
}

func handleAuthorize(tokens map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r.Header.Get("Authorization"))
		user := tokens[token]
		if !ok || user == "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			fooddelivery.WriteError(w, http.StatusUnauthorized, "unauthorized", "missing or unknown bearer token")
			return
		}
		fooddelivery.WriteJSON(w, http.StatusOK, Identity{User: user})
	})
}

// bearer extracts the token of an "Authorization: Bearer <token>" header
// (the scheme is case-insensitive, RFC 9110 section 11.1).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
