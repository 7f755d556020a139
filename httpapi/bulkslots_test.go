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

// Slot takeover: when every bulk slot is taken, a newcomer takes one over
// from the network group holding the most slots (its own included), from
// the address holding the most within it, the youngest of that address:
// if that group holds at least two more than the newcomer's, or that
// address at least two more than the newcomer's (in the newcomer's group
// or one holding more). The download taken over is cut and its release
// gives nothing back twice.
func TestBulkSlotTakeover(t *testing.T) {
	key := func(s string) clientKey { return netip.MustParseAddr(s) }
	for _, tc := range []struct {
		name           string
		total, perAddr int
		held           []string // acquired in order, all succeed
		newcomer       string
		want           string // "" = admitted; else the refusing cap
		victim         int    // index into held cut by the takeover, -1 none
	}{
		{"free slot", 4, 2, []string{"10.1.0.1"}, "10.2.0.1", "", -1},
		{"full, one group holds all: its youngest is taken over", 4, 2, []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.1.0.2"}, "10.2.0.1", "", 3},
		{"full, the largest group's youngest", 4, 2, []string{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.3.0.1"}, "10.2.0.1", "", 2},
		{"full, the largest group's address holding the most, not the youngest", 4, 2, []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.3.0.1"}, "10.2.0.1", "", 1},
		{"full, every group holds one: refused", 4, 2, []string{"10.1.0.1", "10.2.0.1", "10.3.0.1", "10.4.0.1"}, "10.5.0.1", "total", -1},
		{"full, the newcomer's group holds one less only: refused", 4, 2, []string{"10.1.0.1", "10.1.0.2", "10.2.0.1", "10.3.0.1"}, "10.2.0.2", "total", -1},
		{"same group as the holders, each address holding two: the youngest", 4, 2, []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.1.0.2"}, "10.1.0.3", "", 3},
		{"issue 17: 4 addresses × 2 of one /16 hold all 8, a fifth address of it", 8, 2,
			[]string{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"}, "10.1.0.5", "", 7},
		{"same group, the address holding the most loses one", 4, 4, []string{"10.1.0.1", "10.1.0.2", "10.1.0.2", "10.1.0.2"}, "10.1.0.3", "", 3},
		{"same group, an address holding three against the newcomer's one", 4, 4, []string{"10.1.0.1", "10.1.0.1", "10.1.0.1", "10.1.0.2"}, "10.1.0.2", "", 2},
		{"same group, two against the newcomer's one: refused (no ping-pong)", 4, 2, []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.3.0.1"}, "10.1.0.2", "total", -1},
		{"same group, every address holds one: refused", 4, 2, []string{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"}, "10.1.0.5", "total", -1},
		{"another group holding one more: its address holding two", 5, 2, []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.2.0.1", "10.2.0.2"}, "10.2.0.3", "", 1},
		{"another group holding as many: its address holding two is not taken", 4, 2, []string{"10.1.0.1", "10.1.0.1", "10.2.0.1", "10.2.0.2"}, "10.2.0.3", "total", -1},
		{"the victim's address came back: refused", 4, 2, []string{"10.1.0.1", "10.1.0.2", "10.1.0.2", "10.1.0.3"}, "10.1.0.1", "total", -1},
		{"per-address cap first", 4, 2, []string{"10.1.0.1", "10.1.0.1", "10.1.0.2", "10.1.0.2"}, "10.1.0.1", "per_address", -1},
		{"IPv6 groups are /32s", 4, 2, []string{"2001:db8:1::", "2001:db8:1::", "2001:db8:2::", "2001:db8:2::"}, "2001:db9::", "", 3},
	} {
		var inFlight int
		b := newBulkSlots(tc.total, tc.perAddr, func(n int) { inFlight = n })
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
		if inFlight != min(len(tc.held)+map[bool]int{true: 1, false: 0}[release != nil], tc.total) {
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
// of ends early; so does, once they fill every slot again, a client behind
// a third address of their own /16 (issue 17).
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
	openSlow := func(ip string) net.Conn {
		t.Helper()
		c, err := dialFrom(ip, ls.addr)
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: cfindexd\r\nConnection: close\r\n\r\n", path); err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitInFlight := func(n int) {
		t.Helper()
		deadline := time.Now().Add(ioDeadline)
		for ls.metric(t, "cfindexd_http_bulk_in_flight") != float64(n) {
			if time.Now().After(deadline) {
				t.Fatalf("bulk downloads in flight never reached %d", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for i := range slots {
		openSlow(fmt.Sprintf("127.8.0.%d", 1+i/perAddr))
		waitInFlight(i + 1) // in order, so that the youngest is the last
	}
	wasCut := func(c net.Conn) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(ioDeadline))
		got, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the download taken over is still open after %d bytes", got)
		}
		if got >= fileLen {
			t.Fatalf("the download taken over got the whole file (%d bytes)", got)
		}
	}
	code, n, err := ls.download("127.9.0.1", path)
	if err != nil || code != 200 || n != fileLen {
		t.Fatalf("client of a fresh network: %d, %d of %d bytes, %v", code, n, fileLen, err)
	}
	// The youngest slow download was cut: its body ends early.
	wasCut(slow[slots-1])
	// The slow readers fill every slot again; a third address of their
	// /16 takes over from one of theirs.
	again := openSlow("127.8.0.2")
	waitInFlight(slots)
	code, n, err = ls.download("127.8.0.9", path)
	if err != nil || code != 200 || n != fileLen {
		t.Fatalf("a third address of the slow readers' /16: %d, %d of %d bytes, %v", code, n, fileLen, err)
	}
	wasCut(again)
	ls.alive(t, "127.9.0.2")
}

// TestBulkSlotTakeoverEnds pins that takeovers cannot go on forever: every
// client wants perAddr slots and asks again at once whenever it holds
// fewer (a download cut, or refused); rounds of asks in a fixed order
// settle, with no takeover in the last round, well within a bound.
func TestBulkSlotTakeoverEnds(t *testing.T) {
	for _, tc := range []struct {
		name           string
		total, perAddr int
		clients        []string
	}{
		{"one /16 and a neighbour", 8, 2, []string{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.5", "10.2.0.1"}},
		{"two groups, two addresses each", 4, 2, []string{"10.1.0.1", "10.1.0.2", "10.2.0.1", "10.2.0.2"}},
		{"many addresses, few slots", 3, 3, []string{"10.1.0.1", "10.1.0.2", "10.2.0.1", "10.3.0.1", "10.3.0.2", "10.3.0.3"}},
		{"every client its own group", 4, 4, []string{"10.1.0.1", "10.2.0.1", "10.3.0.1", "10.4.0.1", "10.5.0.1"}},
	} {
		b := newBulkSlots(tc.total, tc.perAddr, func(int) {})
		held := make([]int, len(tc.clients))
		settled := false
		for round := 0; round < 100 && !settled; round++ {
			settled = true
			for i, ip := range tc.clients {
				for held[i] < tc.perAddr {
					release, _ := b.acquire(netip.MustParseAddr(ip), func() { held[i]-- })
					if release == nil {
						break
					}
					held[i]++
					settled = false
				}
			}
		}
		if !settled {
			t.Errorf("%s: still taking slots over after 100 rounds: %v", tc.name, held)
		}
	}
}
