package p2p

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// handshakeCountingMetrics is countingMetrics with the transport metrics.
type handshakeCountingMetrics struct {
	*countingMetrics
	mu         sync.Mutex
	handshakes map[string]int
}

var _ TransportMetrics = (*handshakeCountingMetrics)(nil)

func (m *handshakeCountingMetrics) TransportPeers(string, int)      {}
func (m *handshakeCountingMetrics) TransportBytes(string, int, int) {}
func (m *handshakeCountingMetrics) V2Handshake(result string) {
	m.mu.Lock()
	m.handshakes[result]++
	m.mu.Unlock()
}

func (m *handshakeCountingMetrics) handshake(result string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.handshakes[result]
}

// floodHandshake opens a v2 handshake from ip: a random 64-byte key (any
// 64 bytes are an ElligatorSwift encoding), then nothing. It reports
// whether the server went on to send its key (the handshake got past the
// gate's rate) rather than close the connection.
func floodHandshake(addr, ip string) (admitted bool, err error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: ioTimeout}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(ioTimeout))
	key := make([]byte, 64)
	_, _ = rand.Read(key)
	if _, err := conn.Write(key); err != nil {
		return false, err
	}
	n, err := io.ReadFull(conn, make([]byte, 64))
	switch {
	case n == 64:
		return true, nil
	case errors.Is(err, io.EOF) || isConnReset(err):
		return false, nil
	}
	return false, err
}

// TestV2HandshakeFloodLeavesGoodClientsServed: v2 handshakes from many
// addresses, one network group flooding and many groups opening one
// each, while a v1 client and btcd's v2 peer are served. With the clock
// still, the flooding group gets exactly its burst of handshakes past the
// gate's rate and the rest are refused before any curve work; every other
// group gets its one; both good clients get all their answers.
func TestV2HandshakeFloodLeavesGoodClientsServed(t *testing.T) {
	needLoopbackRange(t)
	const (
		flood  = 60 // from one netgroup (127.40.0.0/16)
		groups = 30 // one each from 127.60.0.0/16 on
		rate   = 2  // a second per netgroup: bursts of 8
		burst  = 4 * rate
	)
	view := newFakeView(200, 18)
	cfg := testConfig(view)
	cfg.V2HandshakeSlots = 1
	cfg.V2HandshakeRate = rate
	still := time.Unix(1_800_000_000, 0)
	cfg.Now = func() time.Time { return still }
	m := &handshakeCountingMetrics{countingMetrics: newCountingMetrics(), handshakes: map[string]int{}}
	cfg.Metrics = m
	srv := startServer(t, cfg)

	var wg sync.WaitGroup
	admitted := make(chan bool, flood+groups)
	errs := make(chan error, flood+groups+2)
	for i := range flood + groups {
		ip := attackIP(40, i, false)
		if i >= flood {
			ip = fmt.Sprintf("127.%d.0.1", 60+i-flood) // a /16 each
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := floodHandshake(srv.addr, ip)
			if err != nil {
				errs <- err
			}
			admitted <- ok
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := wellBehaved(srv.addr, "127.0.0.1", view, 2*ioTimeout); err != nil {
			errs <- err
		}
	}()
	go func() {
		defer wg.Done()
		client := dialBTCD(t, srv.addr, true)
		tip := view.tipBlock().hash
		if got := client.ask(t, 1, wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, &tip)); len(got) != 200 {
			errs <- errors.New("btcd's v2 peer did not get its 200 filters")
		}
	}()
	wg.Wait()
	close(errs)
	close(admitted)
	for err := range errs {
		t.Error(err)
	}
	past := 0
	for ok := range admitted {
		if ok {
			past++
		}
	}
	if want := burst + groups; past != want {
		t.Errorf("%d flood handshakes got the server's key, want %d (the flooding group's burst and one per other group)", past, want)
	}
	if got, want := m.handshake("refused_rate"), flood-burst; got != want {
		t.Errorf("%d handshakes refused by rate, want %d", got, want)
	}
	if got := m.handshake("ok"); got != 1 {
		t.Errorf("%d v2 handshakes completed, want btcd's one", got)
	}
}
