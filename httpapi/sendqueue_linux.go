package httpapi

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unsentBytes returns how many bytes written to c the kernel still holds
// unsent (SIOCOUTQNSD: not yet handed to the network, so held back by the
// client's receive window once the client stops reading), and whether it
// could tell.
func unsentBytes(c net.Conn) (int, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var (
		n    int
		qerr error
	)
	if err := raw.Control(func(fd uintptr) { n, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQNSD) }); err != nil || qerr != nil {
		return 0, false
	}
	return n, true
}
