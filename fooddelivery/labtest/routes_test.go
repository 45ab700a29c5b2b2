package labtest_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/system"
)

func TestReceivedSumsMenuReplicas(t *testing.T) {
	labtest.Run(t, labtest.Options{}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{MenuReplicas: 4})
		hc := &http.Client{Transport: (&memnet.Dialer{Network: sys.Network}).Transport()}
		t.Cleanup(hc.CloseIdleConnections)
		for _, replica := range []string{"menu-1", "menu-4", "menu-4"} {
			_, err := menu.NewClient(hc, memnet.ServiceURL(replica)).Menu(context.Background(), system.SampleRestaurant)
			require.NoError(t, err)
		}
		require.Equal(t, int64(1), labtest.Received(sys, "menu-1", labtest.MenuRoute))
		require.Equal(t, int64(2), labtest.Received(sys, "menu-4", labtest.MenuRoute))
		require.Equal(t, int64(3), labtest.Received(sys, "menu", labtest.MenuRoute), "service menu sums every replica")
		require.Equal(t, int64(3), labtest.MenuCalls(sys))
		require.Zero(t, labtest.Charges(sys))
		require.Zero(t, labtest.OrderCalls(sys))
	})
}
