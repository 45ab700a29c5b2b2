package gateway_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/gateway/ide"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func withIDE(s *system) gateway.Deps {
	d := s.deps()
	d.IDE = true
	return d
}

func TestBrowserOpeningGraphQLGetsTheIDE(t *testing.T) {
	s := newSystem()
	serve(t, withIDE(s), func(t *testing.T, c *client) {
		for _, path := range []string{"/graphql", "/graphql?operationName=A", "/graphql?query=+"} {
			a := c.send(t, http.MethodGet, path, "", "Accept", browserAccept)
			require.Equal(t, http.StatusOK, a.status, "GET %s from a browser; body %.200s", path, a.body)
			assert.Equal(t, "text/html", a.mediaType, path)
			assert.Equal(t, ide.CSP, a.header.Get("Content-Security-Policy"), path)
			assert.Contains(t, a.header.Values("Vary"), "Accept", path)
		}

		page := c.send(t, http.MethodGet, "/graphql", "", "Accept", "text/html")
		require.Equal(t, http.StatusOK, page.status)
		assert.NotContains(t, page.body, "//", "the page names no other origin")
		found := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page.body, -1)
		require.NotEmpty(t, found)
		for _, m := range found {
			path := m[1]
			require.True(t, strings.HasPrefix(path, gateway.IDEPath), "%s is the gateway's", path)
			a := c.send(t, http.MethodGet, path, "", "Accept", "*/*")
			require.Equal(t, http.StatusOK, a.status, "GET %s", path)
			want := "text/javascript"
			if strings.HasSuffix(path, ".css") {
				want = "text/css"
			}
			assert.Equal(t, want, a.mediaType, path)
			assert.NotEmpty(t, a.body, path)
			assert.Equal(t, strconv.Itoa(len(a.body)), a.header.Get("Content-Length"), "%s is sent whole", path)

			h := c.send(t, http.MethodHead, path, "")
			assert.Equal(t, http.StatusOK, h.status, "HEAD %s", path)
		}

		a := c.send(t, http.MethodGet, gateway.IDEPath+"nothing.js", "")
		assert.Equal(t, http.StatusNotFound, a.status)
		a = c.send(t, http.MethodPost, gateway.IDEPath+"ide.js", "")
		assert.Equal(t, http.StatusMethodNotAllowed, a.status)
		assert.Equal(t, "GET, HEAD", a.header.Get("Allow"))
		assert.Equal(t, gateway.CodeMethodNotAllowed, firstCode(a))
	})
}

func TestAPIIsUnchangedWithTheIDE(t *testing.T) {
	s := newSystem()
	serve(t, withIDE(s), func(t *testing.T, c *client) {
		a := c.get(t, browserAccept, "query", "{ restaurants { id } }")
		require.Equal(t, http.StatusOK, a.status, "a GET with a query runs it, even from a browser; body %s", a.body)
		assert.Equal(t, mediaJSON, a.mediaType)
		require.NotNil(t, a.resp)
		assert.NotEmpty(t, a.resp.Data)

		for _, accept := range []string{"", "*/*", mediaJSON, mediaResponse, "text/html;q=0, application/json"} {
			a = c.send(t, http.MethodGet, "/graphql", "", "Accept", accept)
			assert.Equal(t, http.StatusBadRequest, a.status, "no query, Accept %q", accept)
			assert.Equal(t, gateway.CodeMalformedRequest, firstCode(a), "Accept %q: body %s", accept, a.body)
			assert.Contains(t, a.body, "missing query")
		}
		a = c.send(t, http.MethodGet, "/graphql?query=%zz", "", "Accept", browserAccept)
		assert.Equal(t, http.StatusBadRequest, a.status, "a URL that does not parse is the API's to explain")
		assert.Contains(t, a.body, "URL encoding")

		a = c.send(t, http.MethodPost, "/graphql", `{"query":"{ restaurants { id } }"}`,
			"Content-Type", "application/json", "Accept", "application/graphql-response+json, application/json")
		require.Equal(t, http.StatusOK, a.status, "the IDE's own request; body %s", a.body)
		assert.Equal(t, mediaResponse, a.mediaType)
		require.NotNil(t, a.resp)
		assert.Empty(t, a.resp.Errors)
	})
}

func TestNoIDEUnlessAskedFor(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		a := c.send(t, http.MethodGet, gateway.IDEPath+"graphiql.min.js", "")
		assert.Equal(t, http.StatusNotFound, a.status)
		assert.Equal(t, gateway.CodeRouteNotFound, firstCode(a))
	})
}
