package p2p

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
	// PeerDisconnected counts one ended connection by cause: "misbehaving",
	// "timeout", "closed", "rejected" (limits or ban) or "shutdown".
	PeerDisconnected(cause string)
}

// NopMetrics discards everything.
type NopMetrics struct{}

// MessageReceived implements Metrics.
func (NopMetrics) MessageReceived(string, int) {}

// MessageSent implements Metrics.
func (NopMetrics) MessageSent(string, int) {}

// PeersConnected implements Metrics.
func (NopMetrics) PeersConnected(int) {}

// PeerDisconnected implements Metrics.
func (NopMetrics) PeerDisconnected(string) {}
