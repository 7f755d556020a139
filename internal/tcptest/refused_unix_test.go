//go:build unix

package tcptest

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// RefusedAddr refuses connections, and no listener can take its port
// meanwhile.
func TestRefusedAddrRefusesAndHoldsItsPort(t *testing.T) {
	addr := RefusedAddr(t)
	for range 3 {
		c, err := net.DialTimeout("tcp", addr, dialDeadline)
		if err == nil {
			c.Close()
			t.Fatalf("%s accepted a connection", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener took %s", addr)
	}
}
