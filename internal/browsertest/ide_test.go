package browsertest

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The GraphQL IDE: a browser opening /graphql gets GraphiQL, which loads
// the schema through introspection and runs a query, with nothing fetched
// from outside 127.0.0.1.
func TestGraphiQLLoadsTheSchemaAndRunsAQuery(t *testing.T) {
	sys := startSystem(t, "-fast")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(sys.base+"/graphql")); err != nil {
		t.Fatalf("opening %s/graphql: %v", sys.base, err)
	}
	editor := `document.querySelector('.graphiql-query-editor .CodeMirror')`
	waitFor(t, ctx, 60*time.Second, "GraphiQL draws its query editor",
		editor+` !== null`, `document.body.innerText.slice(0, 300)`)
	// The schema is loaded when the Docs explorer can name the query type.
	waitFor(t, ctx, 60*time.Second, "GraphiQL loads the schema through introspection",
		`(() => { const b = document.querySelector('[aria-label="Show Documentation Explorer"]'); if (b) b.click();
		   return document.body.innerText.includes('Query') && !document.body.innerText.includes('Error fetching schema'); })()`,
		`document.body.innerText.slice(0, 300)`)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](editor+`.CodeMirror.setValue('{ restaurants { id name } }')`)); err != nil {
		t.Fatalf("typing the query: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.querySelector('.graphiql-execute-button').click()`)); err != nil {
		t.Fatalf("pressing run: %v", err)
	}
	waitFor(t, ctx, 60*time.Second, "the result of { restaurants { id name } } shows Luigi's",
		`(document.querySelector('.result-window') || {innerText: ''}).innerText.includes('luigis')`,
		`(document.querySelector('.result-window') || document.body).innerText.slice(0, 300)`)
	screenshot(t, ctx, "graphiql")
}
