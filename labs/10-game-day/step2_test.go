package gameday

import "testing"

// Step 2: payment hangs. The stage and its SLOs are gameday.Stages[1]; the
// README's step 2 states them.
func TestStep2PaymentHangs(t *testing.T) { playStage(t, 2) }
