package gameday

import "testing"

// Step 4: payment loses its answers. The stage and its SLOs are gameday.Stages[3]; the
// README's step 4 states them.
func TestStep4LostResponsesChargeOnce(t *testing.T) { playStage(t, 4) }
