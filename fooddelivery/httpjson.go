package fooddelivery

import (
	"encoding/json"
	"net/http"
)

// ErrorBody is the JSON body every service sends with a non-2xx status:
// {"code": "overloaded", "message": "..."}. Code is a stable, machine-readable
// word; Message is for people.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteJSON writes v as a JSON response with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes an ErrorBody with the given status.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	WriteJSON(w, status, ErrorBody{Code: code, Message: message})
}
