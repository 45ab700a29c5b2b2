package gameday

import "testing"

// Step 5: a slow menu replica. The stage and its SLOs are gameday.Stages[4]; the
// README's step 5 states them.
func TestStep5SlowReplica(t *testing.T) { playStage(t, 5) }
