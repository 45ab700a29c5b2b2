// Package browsertest drives the running food-delivery system's pages (the
// dashboard at / and the GraphQL IDE at /graphql) in headless Chromium with
// chromedp. It is a module of its own, so that learners never download
// chromedp; `go run ./cmd/workshop verify` runs it when a Chromium is on
// PATH and says how to enable it otherwise. Run it alone with
//
//	cd internal/browsertest && go test ./...
//
// and add -update to rewrite the screenshots under docs/.
package browsertest
