// Package courier is the courier service of the food-delivery system:
// delivery estimates, courier assignment, and a dispatch board whose rows
// are written with optimistic concurrency (read a version, write only if
// it is unchanged).
package courier

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gophereats/resilience/fooddelivery"
)

// Deps is everything the courier service needs.
type Deps struct {
	// Instance names the instance and carries its metrics, concurrency
	// limit and fault hook; every route is wrapped by Instance.Route.
	// Required.
	Instance *fooddelivery.Instance
	// Board holds couriers, assignments and the dispatch board. Required.
	Board *Board
}

// AssignRequest is the body of POST /assignments.
type AssignRequest struct {
	OrderID      string `json:"orderId"`
	RestaurantID string `json:"restaurantId"`
}

// PutRowRequest is the body of PUT /board/{row}.
type PutRowRequest struct {
	Value string `json:"value"`
}

// New returns the courier service's handler:
//
//	GET  /eta/{restaurantId}  200 ETA: a window of 10-15 minutes starting at 20-25 minutes,
//	                          fixed per restaurant id
//	POST /assignments         AssignRequest -> 201 Assignment (a new courier assigned), or
//	                          200 Assignment (the order already had one); 400 "bad_request"
//	GET  /board/{row}         200 Row (version 0 if never written); ETag: "<version>"
//	PUT  /board/{row}         PutRowRequest with If-Match: <version> (bare or quoted)
//	                          -> 200 Row with the new version; 409 "version_conflict" (body:
//	                          ErrorBody; the current version in the ETag header);
//	                          428 "missing_if_match"; 400 "bad_request"; 413 "value_too_large"
//	                          (over MaxRowValueBytes); 422 "board_full" (a new row past MaxRows)
//
// New panics if a dependency is nil (a wiring error).
func New(d Deps) http.Handler {
	if d.Instance == nil || d.Board == nil {
		panic("courier: New needs Deps.Instance and Deps.Board")
	}
	r := chi.NewRouter()
	routes(r, d)
	return r
}

func routes(r chi.Router, d Deps) {
	in := d.Instance
	r.Method("GET", "/eta/{restaurantId}", in.Route("GET /eta/{restaurantId}", handleETA()))
	r.Method("POST", "/assignments", in.Route("POST /assignments", handleAssign(d.Board)))
	r.Method("GET", "/board/{row}", in.Route("GET /board/{row}", handleGetRow(d.Board)))
	r.Method("PUT", "/board/{row}", in.Route("PUT /board/{row}", handlePutRow(d.Board)))
}

func handleETA() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fooddelivery.WriteJSON(w, http.StatusOK, etaFor(chi.URLParam(r, "restaurantId")))
	})
}

func handleAssign(b *Board) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req AssignRequest
		if err := fooddelivery.ReadJSON(w, r, &req); err != nil {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "body is not a JSON assignment request: "+err.Error())
			return
		}
		if req.OrderID == "" || req.RestaurantID == "" {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "orderId and restaurantId are required")
			return
		}
		a, created := b.Assign(req.OrderID)
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		fooddelivery.WriteJSON(w, status, a)
	})
}

func handleGetRow(b *Board) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		row := b.Row(chi.URLParam(r, "row"))
		w.Header().Set("ETag", etag(row.Version))
		fooddelivery.WriteJSON(w, http.StatusOK, row)
	})
}

func handlePutRow(b *Board) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "row")
		var req PutRowRequest
		if err := fooddelivery.ReadJSON(w, r, &req); err != nil {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "body is not a JSON row value: "+err.Error())
			return
		}
		match := r.Header.Get("If-Match")
		if match == "" {
			fooddelivery.WriteError(w, http.StatusPreconditionRequired, "missing_if_match", "PUT /board/{row} needs If-Match: <version>")
			return
		}
		version, ok := parseVersion(match)
		if !ok {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "If-Match must be a version number, got "+fooddelivery.Quote(match))
			return
		}
		if len(req.Value) > MaxRowValueBytes {
			fooddelivery.WriteError(w, http.StatusRequestEntityTooLarge, "value_too_large",
				"a row's value is at most "+strconv.Itoa(MaxRowValueBytes)+" bytes; this one is "+strconv.Itoa(len(req.Value)))
			return
		}
		row, ok, err := b.Put(name, version, req.Value)
		if errors.Is(err, ErrBoardFull) {
			fooddelivery.WriteError(w, http.StatusUnprocessableEntity, "board_full",
				"the dispatch board holds its "+strconv.Itoa(MaxRows)+" rows; write to one of them")
			return
		}
		w.Header().Set("ETag", etag(row.Version))
		if !ok {
			fooddelivery.WriteError(w, http.StatusConflict, "version_conflict",
				"row "+fooddelivery.Quote(name)+" is at version "+strconv.FormatInt(row.Version, 10)+", not "+strconv.FormatInt(version, 10))
			return
		}
		fooddelivery.WriteJSON(w, http.StatusOK, row)
	})
}

func etag(v int64) string { return `"` + strconv.FormatInt(v, 10) + `"` }

func minutes(n int) time.Duration { return time.Duration(n) * time.Minute }
