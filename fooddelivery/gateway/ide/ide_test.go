package ide_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/gateway/ide"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vendored are the third-party files, with the sizes assets/README.md
// states.
var vendored = map[string]struct {
	file string
	size int64
}{
	"graphiql.min.js":             {"assets/graphiql/graphiql.min.js", 3513580},
	"graphiql.min.css":            {"assets/graphiql/graphiql.min.css", 425367},
	"react.production.min.js":     {"assets/react/react.production.min.js", 10751},
	"react-dom.production.min.js": {"assets/react-dom/react-dom.production.min.js", 131835},
}

var refs = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*"([^"]*)"`)

func page(t *testing.T) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	ide.New("/graphql", "/graphql/ide/").ServePage(w, httptest.NewRequest(http.MethodGet, "/graphql", nil))
	require.Equal(t, http.StatusOK, w.Code)
	return w
}

func TestPageIsHTMLWithAStrictCSP(t *testing.T) {
	w := page(t)
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, ide.CSP, w.Header().Get("Content-Security-Policy"))
	assert.Contains(t, w.Header().Values("Vary"), "Accept", "the endpoint's answer depends on Accept")
	assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
	assert.Equal(t, strconv.Itoa(w.Body.Len()), w.Header().Get("Content-Length"))
	assert.Contains(t, w.Body.String(), `data-endpoint="/graphql"`)

	for _, directive := range strings.Split(ide.CSP, ";") {
		if strings.Contains(directive, "http") || strings.Contains(directive, "*") {
			t.Errorf("the CSP allows another origin: %q", directive)
		}
	}
	assert.Contains(t, ide.CSP, "default-src 'none'")
	assert.Contains(t, ide.CSP, "script-src 'self';", "no inline or eval'd scripts")
	assert.Contains(t, ide.CSP, "connect-src 'self';", "queries go to the page's origin only")
}

func TestPageRefersOnlyToItsOwnFiles(t *testing.T) {
	body := page(t).Body.String()
	assert.NotContains(t, body, "//", "no absolute or protocol-relative URL")
	assert.NotRegexp(t, `<script>|<script [^>]*>[^<]`, body, "no inline script (the CSP would block it)")
	names := map[string]bool{}
	for _, n := range ide.AssetNames() {
		names[n] = true
	}
	found := refs.FindAllStringSubmatch(body, -1)
	require.Len(t, found, 6, "two style sheets and four scripts")
	for _, m := range found {
		u := m[1]
		require.True(t, strings.HasPrefix(u, "/graphql/ide/"), "%s is under the assets path", u)
		assert.True(t, names[strings.TrimPrefix(u, "/graphql/ide/")], "%s is served", u)
	}
}

func TestAssetsAreServedWhole(t *testing.T) {
	h := ide.New("/graphql", "/graphql/ide/")
	own := map[string]string{"ide.js": "ide.js", "ide.css": "ide.css"}
	require.Len(t, ide.AssetNames(), len(vendored)+len(own))
	for _, name := range ide.AssetNames() {
		file := own[name]
		if v, ok := vendored[name]; ok {
			file = v.file
			st, err := os.Stat(file)
			require.NoError(t, err)
			assert.Equal(t, v.size, st.Size(), "%s: the size assets/README.md states", file)
		}
		want, err := os.ReadFile(file)
		require.NoError(t, err)

		w := httptest.NewRecorder()
		h.ServeAsset(w, httptest.NewRequest(http.MethodGet, "/graphql/ide/"+name, nil))
		require.Equal(t, http.StatusOK, w.Code, name)
		ct := "text/javascript; charset=utf-8"
		if strings.HasSuffix(name, ".css") {
			ct = "text/css; charset=utf-8"
		}
		assert.Equal(t, ct, w.Header().Get("Content-Type"), name)
		assert.Equal(t, strconv.Itoa(len(want)), w.Header().Get("Content-Length"), name)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), name)
		assert.True(t, w.Body.String() == string(want), "%s: the embedded bytes", name)

		etag := w.Header().Get("ETag")
		require.NotEmpty(t, etag, name)
		r := httptest.NewRequest(http.MethodGet, "/graphql/ide/"+name, nil)
		r.Header.Set("If-None-Match", etag)
		w = httptest.NewRecorder()
		h.ServeAsset(w, r)
		assert.Equal(t, http.StatusNotModified, w.Code, "%s: revalidation sends nothing", name)
	}

	w := httptest.NewRecorder()
	h.ServeAsset(w, httptest.NewRequest(http.MethodGet, "/graphql/ide/graphiql.min.js.map", nil))
	assert.Equal(t, http.StatusNotFound, w.Code, "only the listed files")
}

// The CSS is the one vendored file that could make the browser fetch
// something (fonts, images): all its URLs must be inline data.
func TestStylesNeedNoNetwork(t *testing.T) {
	for _, file := range []string{vendored["graphiql.min.css"].file, "ide.css"} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		css := string(b)
		assert.NotContains(t, css, "@import", file)
		for _, m := range regexp.MustCompile(`url\(\s*['"]?([^'")]{0,20})`).FindAllStringSubmatch(css, -1) {
			assert.True(t, strings.HasPrefix(m[1], "data:"), "%s: url(%s...) is not inline", file, m[1])
		}
	}
}

func TestTheFetcherPostsToTheEndpoint(t *testing.T) {
	b, err := os.ReadFile("ide.js")
	require.NoError(t, err)
	js := string(b)
	assert.Contains(t, js, "fetch(endpoint")
	assert.Contains(t, js, "method: 'POST'")
	assert.Contains(t, js, "'Accept': 'application/graphql-response+json, application/json'")
	assert.Contains(t, js, "'Content-Type': 'application/json'")
	assert.NotContains(t, js, "http", "no other origin")
}
