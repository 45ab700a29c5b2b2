package gameday

import "testing"

// Step 8: several incidents at once. The stage and its SLOs are gameday.Stages[7]; the
// README's step 8 states them.
func TestStep8EverythingAtOnce(t *testing.T) { playStage(t, 8) }
