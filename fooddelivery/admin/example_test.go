package admin_test

import (
	"context"
	"log"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/admin"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// The wiring of the runnable system: the load generator, the controls, the
// scenario runner and the admin API, mounted beside the gateway on its
// own address.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sys, err := system.Start(system.Config{Network: memnet.NewLoopback(), GatewayAddr: "127.0.0.1:8080"})
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()

	// Customers: paused until someone sets a rate. A nil Client means a
	// TCP client of the generator's own.
	gen, err := loadgen.New(loadgen.Config{URL: sys.GatewayURL(), Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- gen.Run(ctx) }()

	ctl := &scenario.Controls{
		Faults:  sys.Faults,
		Load:    gen,
		GameDay: &fooddelivery.GameDay{}, // the same switch lab 07's fallbacks read
		Log:     scenario.NewLog(0),
	}
	runner, err := scenario.NewRunner(ctl, 1) // 0.1 plays every scenario ten times faster
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()

	h, err := admin.New(admin.Config{Addr: sys.Network.TCPAddr("gateway"), Controls: ctl, Runner: runner})
	if err != nil {
		log.Fatal(err)
	}
	if err := sys.Mount("/admin", h); err != nil {
		log.Fatal(err)
	}

	// ... serve until told to stop, then:
	stop()
	<-done
}
