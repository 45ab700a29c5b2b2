// Package composefile checks the repository's compose.yaml without a
// Docker engine: its tests load the file with compose-go (the loader
// Docker Compose v2 itself uses), validated against the Compose
// specification's schema, and hold it to what its header comment and the
// README promise: one container per service from one image built here,
// only the gateway and Toxiproxy's API published, on 127.0.0.1 and the
// same port inside and out, a volume under the order service's and
// payment's -data, and every link dialled through a Toxiproxy listener
// that exists; and with its commented Jaeger lines uncommented, a Jaeger
// published on 127.0.0.1 that every service sends its spans to (-otlp).
//
// It is a module of its own, so that learners never download compose-go;
// `go run ./cmd/workshop verify` runs its tests when its modules are in
// the module cache (`go -C internal/composefile mod download` fetches
// them). Where Docker runs, cmd/fooddelivery's compose test starts the
// stack itself.
package composefile
