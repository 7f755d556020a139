package p2p

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
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

func (m *countingMetrics) PeerEvicted()       { m.event("evicted") }
func (m *countingMetrics) PeerDiscouraged()   { m.event("discouraged") }
func (m *countingMetrics) SendStalled()       { m.event("stalled") }
func (m *countingMetrics) PeerPanicked()      { m.event("panic") }
func (m *countingMetrics) LargeFrameDropped() { m.event("large_frame_dropped") }

// UploadTargetRefused counts "upload_target" and "upload_target:"+reason.
func (m *countingMetrics) UploadTargetRefused(reason string) {
	m.event("upload_target")
	m.event("upload_target:" + reason)
}

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

// sentOf returns the messages of cmd sent and their bytes.
func (m *countingMetrics) sentOf(cmd string) (count, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent[cmd], m.sentBytes[cmd]
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

// batchCountingMetrics is countingMetrics that also counts in batches
// (BatchMetrics), recording each batch call.
type batchCountingMetrics struct {
	*countingMetrics
	batches int
}

func (m *batchCountingMetrics) MessagesSent(cmd string, count, bytes int) {
	m.mu.Lock()
	m.sent[cmd] += count
	m.sentBytes[cmd] += bytes
	m.batches++
	m.mu.Unlock()
}

// A chunk of cfilter frames is reported as its messages: in one call to a
// BatchMetrics, else one MessageSent per frame with the frame's size.
func TestChunkCountedPerMessage(t *testing.T) {
	var chunk cfilterChunk
	var total int
	for i, n := range []int{10, 300, 70_000} {
		h := chainhash.Hash{byte(i)}
		if err := chunk.add(wire.MainNet, &h, make([]byte, n), [4]byte{}); err != nil {
			t.Fatal(err)
		}
		total += wireframe.HeaderSize + 1 + 32 + wire.VarIntSerializeSize(uint64(n)) + n
	}
	entry := outFrame{command: wire.CmdCFilter, frame: chunk.frames, count: chunk.count}
	if len(chunk.frames) != total {
		t.Fatalf("chunk of %d bytes, want %d", len(chunk.frames), total)
	}

	plain := newCountingMetrics()
	s := &Server{metrics: plain}
	s.countSent(entry)
	if plain.sent[wire.CmdCFilter] != 3 || plain.sentBytes[wire.CmdCFilter] != total {
		t.Fatalf("per message: %d messages, %d bytes; want 3, %d", plain.sent[wire.CmdCFilter], plain.sentBytes[wire.CmdCFilter], total)
	}
	batch := &batchCountingMetrics{countingMetrics: newCountingMetrics()}
	s = &Server{metrics: batch, batch: batch}
	s.countSent(entry)
	if batch.batches != 1 || batch.sent[wire.CmdCFilter] != 3 || batch.sentBytes[wire.CmdCFilter] != total {
		t.Fatalf("batched: %d calls, %d messages, %d bytes; want 1, 3, %d", batch.batches, batch.sent[wire.CmdCFilter], batch.sentBytes[wire.CmdCFilter], total)
	}
}
