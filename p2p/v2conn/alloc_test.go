package v2conn

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"runtime"
	"testing"
)

// allocSlack is what reading and refusing any packet may allocate besides
// buffers for its bytes: the reused read buffer, an error, small structs.
const allocSlack = 24 << 10

// costPerRun runs each of runs prepared reads and returns the bytes
// allocated per read.
func costPerRun(runs int, prepare func(i int) func()) uint64 {
	reads := make([]func(), runs)
	for i := range reads {
		reads[i] = prepare(i)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, read := range reads {
		read()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// A packet declaring 16 MiB costs at most a small multiple of the bytes
// that arrived, whether the cap refuses it at once or (a cap raised to the
// protocol's maximum) its body is cut short.
func TestDeclaredLengthCostsTheBytesReceived(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxPayload int
		body       int
	}{
		{"refused by the cap", 0, 0},
		{"refused by the cap, body sent", 0, 100_000},
		{"under a raised cap, nothing sent", maxLength - longTypeSize, 0},
		{"under a raised cap, 100 bytes sent", maxLength - longTypeSize, 100},
		{"under a raised cap, 200 kB sent", maxLength - longTypeSize, 200_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := make([]byte, tc.body)
			got := costPerRun(10, func(int) func() {
				ini, resp := sessionPair(t)
				stream := append(sealer{ini.send}.length(t, maxLength), body...)
				c := responderConn(resp, bytes.NewReader(stream), Config{MaxPayload: tc.maxPayload})
				return func() {
					if _, err := c.ReadMessage(); err == nil {
						t.Error("a cut packet was read")
					}
				}
			})
			received := LengthSize + tc.body
			if limit := uint64(3*received + allocSlack); got > limit {
				t.Fatalf("%d bytes received, %d allocated, limit %d", received, got, limit)
			}
		})
	}
}

// The garbage search costs a small multiple of the garbage: with its
// terminator at the last place, and without one.
func TestGarbageCostsTheBytesReceived(t *testing.T) {
	var term [TerminatorSize]byte
	_, _ = rand.Read(term[:])
	garbage := make([]byte, MaxGarbage+TerminatorSize)
	_, _ = rand.Read(garbage)
	for _, tc := range []struct {
		name   string
		stream []byte
		ok     bool
	}{
		{"maximal garbage", append(garbage[:MaxGarbage:MaxGarbage], term[:]...), true},
		{"no terminator", garbage, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := costPerRun(20, func(int) func() {
				br := bufio.NewReaderSize(bytes.NewReader(tc.stream), readBufferSize)
				return func() {
					if _, err := readGarbage(br, term); (err == nil) != tc.ok {
						t.Errorf("err %v", err)
					}
				}
			})
			if limit := uint64(3*len(tc.stream) + 1024); got > limit {
				t.Fatalf("%d bytes received, %d allocated, limit %d", len(tc.stream), got, limit)
			}
		})
	}
}

// A stream of decoys, empty or not, costs a small multiple of its bytes,
// not of the packets' count: nothing is kept from one decoy to the next.
func TestDecoyStreamCostsTheBytesReceived(t *testing.T) {
	for _, tc := range []struct{ size, decoys int }{{0, 5000}, {1, 5000}, {1000, 500}, {20_000, 100}} {
		size, decoys := tc.size, tc.decoys
		t.Run(itoa(size), func(t *testing.T) {
			var received int
			got := costPerRun(5, func(int) func() {
				ini, resp := sessionPair(t)
				s := sealer{ini.send}
				var stream []byte
				for range decoys {
					stream = append(stream, s.packet(t, nil, true, make([]byte, size))...)
				}
				stream = append(stream, s.packet(t, nil, false, message(t, "ping", make([]byte, 8)))...)
				received = len(stream)
				c := responderConn(resp, bytes.NewReader(stream), Config{MaxDecoyBytes: len(stream)})
				return func() {
					if m, err := c.ReadMessage(); err != nil || m.Command != "ping" {
						t.Errorf("%+v %v", m, err)
					}
				}
			})
			if limit := uint64(4*received + allocSlack); got > limit {
				t.Fatalf("%d bytes received, %d allocated, limit %d", received, got, limit)
			}
			t.Logf("%d decoys of %d bytes: %d bytes received, %d allocated", decoys, size, received, got)
		})
	}
}

// Each small message read costs a few allocations, whatever came before.
func TestSmallMessageAllocations(t *testing.T) {
	ini, resp := sessionPair(t)
	s := sealer{ini.send}
	var stream []byte
	const runs = 100
	for range runs + 1 {
		stream = append(stream, s.packet(t, nil, false, message(t, "getcfilters", make([]byte, 37)))...)
	}
	c := responderConn(resp, bytes.NewReader(stream), Config{})
	if _, err := c.ReadMessage(); err != nil { // the read buffer
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(runs-1, func() {
		if _, err := c.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Fatalf("%.1f allocations per message", allocs)
	}
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}
