package gameday

import "testing"

// Step 1: a healthy rush. The stage and its SLOs are gameday.Stages[0]; the
// README's step 1 states them.
func TestStep1HealthyRush(t *testing.T) { playStage(t, 1) }
