package p2p

import (
	"encoding/binary"

	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Metrics receives the server's counters. Implementations must be safe for
// concurrent use and fast (they are called on every message); the rest or
// metrics package plugs Prometheus in behind it.
type Metrics interface {
	// MessageReceived counts one inbound message of command with its size in
	// bytes (header included). Unknown commands are reported as "unknown".
	MessageReceived(command string, bytes int)
	// MessageSent counts one outbound message of command with its size in
	// bytes (header included): what the server serves, by message type.
	MessageSent(command string, bytes int)
	// PeersConnected reports the number of peers past the handshake.
	PeersConnected(n int)
	// PeerDisconnected counts one ended connection by cause (one of
	// DisconnectCauses).
	PeerDisconnected(cause string)

	// PeerEvicted counts a peer disconnected to make room for a new one.
	PeerEvicted()
	// ConnectionRefused counts a connection refused at accept, by reason
	// (one of RefusalReasons).
	ConnectionRefused(reason string)
	// PeerDiscouraged counts a misbehaving peer whose address was
	// discouraged.
	PeerDiscouraged()
	// SendStalled counts a peer disconnected because its send queue stayed
	// full without draining for Config.SendStallTimeout.
	SendStalled()
	// UploadTargetRefused counts a request refused (and its peer
	// disconnected) under the upload target, by reason (one of
	// UploadRefusalReasons): a historical block, plain or filtered, past
	// the target or the peer's group share of it, or a mempool request
	// past the target.
	UploadTargetRefused(reason string)
	// PeerPanicked counts a panic recovered in a peer's goroutine (the
	// peer is disconnected, the server stays up).
	PeerPanicked()
	// LargeFrameDropped counts a large frame discarded unread because the
	// server-wide receive budget was spent.
	LargeFrameDropped()
}

// BatchMetrics is an optional interface of a Metrics: MessagesSent counts
// count outbound messages of command, bytes in all (headers included), at
// once, as count calls of MessageSent would. The server writes filters in
// chunks of many cfilter messages and reports each chunk with one call
// when its Metrics implements this; otherwise with one MessageSent per
// message.
type BatchMetrics interface {
	MessagesSent(command string, count, bytes int)
}

// countSent reports a written send-queue entry to the metrics.
func (s *Server) countSent(f outFrame) {
	if f.count <= 1 {
		s.metrics.MessageSent(f.command, len(f.frame)+len(f.payload))
		return
	}
	if s.batch != nil {
		s.batch.MessagesSent(f.command, f.count, len(f.frame)+len(f.payload))
		return
	}
	// count complete frames back to back: each header says its length.
	for rest := f.frame; len(rest) >= wireframe.HeaderSize; {
		n := wireframe.HeaderSize + int(binary.LittleEndian.Uint32(rest[16:20]))
		s.metrics.MessageSent(f.command, n)
		rest = rest[min(n, len(rest)):]
	}
}

// DisconnectCauses lists the causes PeerDisconnected reports: a protocol
// violation (the address is discouraged), an invalid request (disconnect
// without penalty), a timeout, a stalled send queue, an eviction, the
// upload target, a recovered panic, an ordinary close, a connection refused
// at accept, and shutdown.
func DisconnectCauses() []string {
	return []string{
		"misbehaving", "invalid_request", "timeout", "stalled", "evicted",
		"upload_target", "panic", "closed", "rejected", "shutdown",
	}
}

// RefusalReasons lists the reasons ConnectionRefused reports: the server
// is full and no peer could be evicted; the address is discouraged, slots
// are (almost) all taken and no peer has been idle long enough to make
// room.
func RefusalReasons() []string {
	return []string{"full", "discouraged"}
}

// UploadRefusalReasons lists the reasons UploadTargetRefused reports: the
// whole upload target was served in the last 24 h ("target"), or the
// peer's network group was served its share of it ("group_share").
func UploadRefusalReasons() []string {
	var out []string
	for _, r := range peerpolicy.UploadRefusals() {
		out = append(out, string(r))
	}
	return out
}

// SentCommands lists the commands MessageSent reports: every message the
// server sends.
func SentCommands() []string {
	return []string{"version", "verack", "ping", "pong", "headers", "inv", "getdata", "notfound", "block", "cfilter", "cfheaders", "cfcheckpt", "merkleblock", "tx"}
}

// NopMetrics discards everything.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

// MessageReceived implements Metrics.
func (NopMetrics) MessageReceived(string, int) {}

// MessageSent implements Metrics.
func (NopMetrics) MessageSent(string, int) {}

// PeersConnected implements Metrics.
func (NopMetrics) PeersConnected(int) {}

// PeerDisconnected implements Metrics.
func (NopMetrics) PeerDisconnected(string) {}

// PeerEvicted implements Metrics.
func (NopMetrics) PeerEvicted() {}

// ConnectionRefused implements Metrics.
func (NopMetrics) ConnectionRefused(string) {}

// PeerDiscouraged implements Metrics.
func (NopMetrics) PeerDiscouraged() {}

// SendStalled implements Metrics.
func (NopMetrics) SendStalled() {}

// UploadTargetRefused implements Metrics.
func (NopMetrics) UploadTargetRefused(string) {}

// PeerPanicked implements Metrics.
func (NopMetrics) PeerPanicked() {}

// LargeFrameDropped implements Metrics.
func (NopMetrics) LargeFrameDropped() {}
