//go:build !linux

package httpapi

import "net"

// unsentBytes cannot tell the unsent bytes of a connection off Linux: a
// pipelined request is then answered without waiting for the answer
// before it to leave (see awaitAnswerSent).
func unsentBytes(net.Conn) (int, bool) { return 0, false }
