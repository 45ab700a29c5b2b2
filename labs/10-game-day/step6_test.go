package gameday

import "testing"

// Step 6: every menu replica slow. The stage and its SLOs are gameday.Stages[5]; the
// README's step 6 states them.
func TestStep6AllReplicasSlow(t *testing.T) { playStage(t, 6) }
