// Package ide serves GraphiQL, an in-browser GraphQL IDE, for the
// gateway: a page that loads the schema by introspection and sends
// queries to the gateway's endpoint, and the files the page needs.
//
// Everything is embedded and served from the gateway's own origin, so the
// IDE works with no network access; the page's Content-Security-Policy
// (see CSP) forbids loading anything from elsewhere. The vendored files
// are GraphiQL 3.8.3 and React 18.3.1's browser builds, MIT-licensed; see
// assets/README.md for their sizes and licenses.
package ide

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery/internal/sameorigin"
)

// CSP is the page's Content-Security-Policy: scripts, styles, fonts,
// images and requests from the page's own origin only. GraphiQL needs
// two exceptions: its CSS embeds its fonts and icons as data: URLs, and
// its components set inline styles ('unsafe-inline' for styles only;
// scripts stay 'self', so nothing inline runs).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"font-src 'self' data:; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets/graphiql/graphiql.min.js assets/graphiql/graphiql.min.css
//go:embed assets/react/react.production.min.js assets/react-dom/react-dom.production.min.js
//go:embed page.html ide.js ide.css
var files embed.FS

// assets maps the name of each file the page loads to its embedded path.
var assets = map[string]string{
	"graphiql.min.js":             "assets/graphiql/graphiql.min.js",
	"graphiql.min.css":            "assets/graphiql/graphiql.min.css",
	"react.production.min.js":     "assets/react/react.production.min.js",
	"react-dom.production.min.js": "assets/react-dom/react-dom.production.min.js",
	"ide.js":                      "ide.js",
	"ide.css":                     "ide.css",
}

// AssetNames lists the files Handler.ServeAsset serves, by name.
func AssetNames() []string {
	names := make([]string, 0, len(assets))
	for name := range assets {
		names = append(names, name)
	}
	return names
}

// asset is one file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// loadAssets reads the embedded files once, when first served: hashing
// 4 MB is not worth doing in every program that imports the gateway.
var loadAssets = sync.OnceValue(func() map[string]asset {
	out := make(map[string]asset, len(assets))
	for name, p := range assets {
		b, err := files.ReadFile(p)
		if err != nil {
			panic(fmt.Sprintf("ide: embedded file %s: %v", p, err))
		}
		ct := "text/javascript; charset=utf-8"
		if path.Ext(name) == ".css" {
			ct = "text/css; charset=utf-8"
		}
		sum := sha256.Sum256(b)
		out[name] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	}
	return out
})

var pageTemplate = template.Must(template.ParseFS(files, "page.html"))

// Handler serves the IDE's page and files.
type Handler struct {
	page []byte
}

// New returns the IDE for the GraphQL endpoint at path endpoint (such as
// "/graphql"), whose page loads its files from assetsPath (such as
// "/graphql/ide/", with the trailing slash), where the caller routes
// ServeAsset. Both are paths on the page's own origin.
func New(endpoint, assetsPath string) *Handler {
	if !strings.HasPrefix(endpoint, "/") || !strings.HasPrefix(assetsPath, "/") || !strings.HasSuffix(assetsPath, "/") {
		panic(fmt.Sprintf("ide: endpoint %q and assets path %q must be absolute paths, the assets path ending in /", endpoint, assetsPath))
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, struct{ Endpoint, Assets string }{endpoint, assetsPath}); err != nil {
		panic(fmt.Sprintf("ide: page: %v", err))
	}
	return &Handler{page: buf.Bytes()}
}

// ServePage answers with the IDE's HTML page, whatever the request; the
// caller decides when a request wants it. The response varies with the
// Accept header, as the endpoint answers API clients at the same URL.
func (h *Handler) ServePage(w http.ResponseWriter, r *http.Request) {
	if refused(w, r) {
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
	hd.Add("Vary", "Accept")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(h.page))
}

// ServeAsset serves the file named by the last element of the request's
// path (see AssetNames), or 404. Browsers revalidate with the ETag, so a
// new version is picked up at once and an unchanged one is not resent.
func (h *Handler) ServeAsset(w http.ResponseWriter, r *http.Request) {
	if refused(w, r) {
		return
	}
	a, ok := loadAssets()[path.Base(r.URL.Path)]
	if !ok {
		http.Error(w, "no such file in the GraphQL IDE", http.StatusNotFound)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// refused answers 403 and reports true for a request a web page of another
// site could have made (package sameorigin, as the admin API refuses
// them), judged against the TCP listener's own loopback port. A request on
// another kind of listener (the in-memory network of tests) cannot come
// from a browser and is let through.
func refused(w http.ResponseWriter, r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok {
		return false
	}
	status, _, msg := sameorigin.For(local.Port).Check(r)
	if status == 0 {
		return false
	}
	http.Error(w, msg, status)
	return true
}
