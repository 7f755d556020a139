package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Slot takeover: when every bulk slot is taken, a newcomer takes over the
// youngest download of the network group holding the most slots, only if
// that group holds at least two more than the newcomer's; the download
// taken over is cut and its release gives nothing back twice.
func TestBulkSlotTakeover(t *testing.T) {
	key := func(s string) clientKey { return netip.MustParseAddr(s) }
	for _, tc := range []struct {
		name     string
		held     []string // acquired in order, all succeed
		newcomer string
		want     string // "" = admitted; else the refusing cap
		victim   int    // index into held cut by the takeover, -1 none
	}{
		{"free slot", []string{"10.1.0.1"}, "10.2.0.1", "", -1},
		{"full, one group holds all: its youngest is taken over", []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.1.0.2"}, "10.2.0.1", "", 3},
		{"full, the largest group's youngest", []string{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.3.0.1"}, "10.2.0.1", "", 2},
		{"full, every group holds one: refused", []string{"10.1.0.1", "10.2.0.1", "10.3.0.1", "10.4.0.1"}, "10.5.0.1", "total", -1},
		{"full, the newcomer's group holds one less only: refused", []string{"10.1.0.1", "10.1.0.2", "10.2.0.1", "10.3.0.1"}, "10.2.0.2", "total", -1},
		{"same group as the holders: refused", []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.1.0.2"}, "10.1.0.3", "total", -1},
		{"per-address cap first", []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.1.0.2"}, "10.1.0.1", "per_address", -1},
		{"IPv6 groups are /32s", []string{"2001:db8:1::", "2001:db8:1::", "2001:db8:2::", "2001:db8:2::"}, "2001:db9::", "", 3},
	} {
		var inFlight int
		b := newBulkSlots(4, 2, func(n int) { inFlight = n })
		cut := make([]int, len(tc.held))
		releases := make([]func(), len(tc.held))
		for i, ip := range tc.held {
			var refused string
			releases[i], refused = b.acquire(key(ip), func() { cut[i]++ })
			if releases[i] == nil {
				t.Fatalf("%s: holder %d (%s) refused: %s", tc.name, i, ip, refused)
			}
		}
		release, refused := b.acquire(key(tc.newcomer), func() {})
		if refused != tc.want || (release == nil) != (tc.want != "") {
			t.Errorf("%s: refused %q, want %q", tc.name, refused, tc.want)
			continue
		}
		for i, n := range cut {
			if want := map[bool]int{true: 1, false: 0}[i == tc.victim]; n != want {
				t.Errorf("%s: holder %d cut %d times, want %d", tc.name, i, n, want)
			}
		}
		if inFlight != min(len(tc.held)+map[bool]int{true: 1, false: 0}[release != nil], 4) {
			t.Errorf("%s: %d in flight", tc.name, inFlight)
		}
		// Everyone gives back: the victim's release is a no-op, the
		// rest free their slots, and nothing is left counted.
		for _, r := range releases {
			r()
			r()
		}
		if release != nil {
			release()
		}
		if inFlight != 0 || len(b.slots) != 0 || len(b.byAddr) != 0 || len(b.byGroup) != 0 {
			t.Errorf("%s: after every release %d in flight, %d slots, %v, %v", tc.name, inFlight, len(b.slots), b.byAddr, b.byGroup)
		}
	}
}

// TestBulkSlotsTakenOverForFreshNetwork fills every bulk slot with
// downloads from two addresses of one /16 that read nothing (with a
// minimum rate so low they would keep their slots): a client from another
// network gets the whole file at once, and the download it took the slot
// of ends early.
func TestBulkSlotsTakenOverForFreshNetwork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("dialing from 127.x.y.z source addresses needs Linux")
	}
	const (
		slots, perAddr = 4, 2
		pad            = 8 << 10
		blocks         = 2000
	)
	v := paddedView{fakeView: synthView(t, synthChain(t, blocks-1, 21)), pad: pad}
	ls := serveLive(t, v, Config{
		MaxBulkInFlight: slots, MaxBulkPerAddr: perAddr,
		BulkMinRate: 1, BulkMinRateWindow: time.Hour,
	}, zerolog.Nop())
	const path = "/bulk/filters/0.bin"
	fileLen := int64(blocks * (3 + pad))
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for i := range slots {
		c, err := dialFrom(fmt.Sprintf("127.8.0.%d", 1+i/perAddr), ls.addr)
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: cfindexd\r\nConnection: close\r\n\r\n", path); err != nil {
			t.Fatal(err)
		}
		// In order, so that the youngest is the last.
		deadline := time.Now().Add(ioDeadline)
		for ls.metric(t, "cfindexd_http_bulk_in_flight") < float64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("slow reader %d never took a slot", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Another address of the same network is refused: its group holds
	// every slot already, as it would after taking one.
	if code, _, err := ls.get("127.8.0.9", path); err != nil || code != 503 {
		t.Fatalf("a third address of the slow readers' /16: %d %v", code, err)
	}
	code, n, err := ls.download("127.9.0.1", path)
	if err != nil || code != 200 || n != fileLen {
		t.Fatalf("client of a fresh network: %d, %d of %d bytes, %v", code, n, fileLen, err)
	}
	// The youngest slow download was cut: its body ends early.
	c := slow[slots-1]
	_ = c.SetReadDeadline(time.Now().Add(ioDeadline))
	got, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the download taken over is still open after %d bytes", got)
	}
	if got >= fileLen {
		t.Fatalf("the download taken over got the whole file (%d bytes)", got)
	}
	ls.alive(t, "127.9.0.2")
}
