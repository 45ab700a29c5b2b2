package gameday

import "testing"

// Step 7: auth down. The stage and its SLOs are gameday.Stages[6]; the
// README's step 7 states them.
func TestStep7AuthDownFailsClosed(t *testing.T) { playStage(t, 7) }
