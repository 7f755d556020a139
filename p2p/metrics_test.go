package p2p

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// countingMetrics records what the server reports.
type countingMetrics struct {
	mu        sync.Mutex
	recv      map[string]int
	sent      map[string]int
	sentBytes map[string]int
	peers     int
	causes    map[string]int
	events    map[string]int // the counters without labels, by method name
	refused   map[string]int
}

var _ Metrics = (*countingMetrics)(nil)

func newCountingMetrics() *countingMetrics {
	return &countingMetrics{recv: map[string]int{}, sent: map[string]int{}, sentBytes: map[string]int{}, causes: map[string]int{}, events: map[string]int{}, refused: map[string]int{}}
}

func (m *countingMetrics) MessageReceived(cmd string, _ int) {
	m.mu.Lock()
	m.recv[cmd]++
	m.mu.Unlock()
}

func (m *countingMetrics) MessageSent(cmd string, n int) {
	m.mu.Lock()
	m.sent[cmd]++
	m.sentBytes[cmd] += n
	m.mu.Unlock()
}

func (m *countingMetrics) PeersConnected(n int) {
	m.mu.Lock()
	m.peers = n
	m.mu.Unlock()
}

func (m *countingMetrics) PeerDisconnected(cause string) {
	m.mu.Lock()
	m.causes[cause]++
	m.mu.Unlock()
}

func (m *countingMetrics) event(name string) {
	m.mu.Lock()
	m.events[name]++
	m.mu.Unlock()
}

func (m *countingMetrics) PeerEvicted()         { m.event("evicted") }
func (m *countingMetrics) PeerDiscouraged()     { m.event("discouraged") }
func (m *countingMetrics) SendStalled()         { m.event("stalled") }
func (m *countingMetrics) UploadTargetRefused() { m.event("upload_target") }
func (m *countingMetrics) PeerPanicked()        { m.event("panic") }
func (m *countingMetrics) LargeFrameDropped()   { m.event("large_frame_dropped") }

func (m *countingMetrics) ConnectionRefused(reason string) {
	m.mu.Lock()
	m.refused[reason]++
	m.mu.Unlock()
}

// count returns the named event counter.
func (m *countingMetrics) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events[name]
}

// refusals returns the refusals for reason.
func (m *countingMetrics) refusals(reason string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused[reason]
}

// disconnects returns the disconnects by cause.
func (m *countingMetrics) disconnects(cause string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.causes[cause]
}

func (m *countingMetrics) received(cmd string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recv[cmd]
}

func (m *countingMetrics) summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for cmd, n := range m.sent {
		parts = append(parts, fmt.Sprintf("%s×%d (%d B)", cmd, n, m.sentBytes[cmd]))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
