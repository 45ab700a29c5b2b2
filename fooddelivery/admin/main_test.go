package admin_test

import (
	"os"
	"runtime"
	"testing"
)

// TestMain runs the package's tests on one P. Their synctest bubbles run
// the whole system with a load generator; under the race detector on a
// loaded machine, a bubble whose timers ran on two threads at once now and
// then sent one request too few in a second (20 for 21: 4 runs in 40
// beside a busy loop; none in 40 on one P). Nothing here measures
// parallel speed.
func TestMain(m *testing.M) {
	runtime.GOMAXPROCS(1)
	os.Exit(m.Run())
}
