package gameday

import "testing"

// Step 3: payment fails, then recovers. The stage and its SLOs are gameday.Stages[2]; the
// README's step 3 states them.
func TestStep3PaymentOutageAndRecovery(t *testing.T) { playStage(t, 3) }
