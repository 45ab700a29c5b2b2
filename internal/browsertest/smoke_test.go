package browsertest

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The harness itself: the system starts, Chromium opens its health page.
func TestChromiumReachesTheSystem(t *testing.T) {
	sys := startSystem(t, "-fast")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(sys.base+"/healthz")); err != nil {
		t.Fatalf("opening %s/healthz: %v", sys.base, err)
	}
	waitFor(t, ctx, 30*time.Second, "the health page says ok",
		`document.body.innerText.includes('"ok"')`, `document.body.innerText`)
}
