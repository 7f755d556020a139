package peerpolicy

import (
	"net/netip"
	"testing"
	"time"
)

// Discouragement covers the address's group (an IPv4 address, an IPv6
// /64) and nothing beyond, and lapses after its duration.
func TestDiscouragementCoversAddressGroup(t *testing.T) {
	d := NewDiscouragement(100, time.Hour, 1, 2)
	now := time.Unix(1_700_000_000, 0)
	d.Add(netip.MustParseAddr("2001:db8:1:2::1"), now)
	d.Add(netip.MustParseAddr("198.51.100.1"), now)
	for ip, want := range map[string]bool{
		"2001:db8:1:2::1":          true,
		"2001:db8:1:2:dead:beef::": true, // same /64, another address
		"2001:db8:1:3::1":          false,
		"198.51.100.1":             true,
		"::ffff:198.51.100.1":      true,
		"198.51.100.2":             false, // IPv4 neighbours are not discouraged
	} {
		if got := d.Has(netip.MustParseAddr(ip), now.Add(time.Minute)); got != want {
			t.Errorf("%s discouraged %v, want %v", ip, got, want)
		}
	}
	if d.Has(netip.MustParseAddr("2001:db8:1:2::7"), now.Add(2*time.Hour)) {
		t.Error("Discouragement outlived its duration")
	}
}

// A full list forgets its oldest entries to take new ones, never grows
// past its size, and keeps an address discouraged again recently.
func TestDiscouragementIsBoundedOldestFirst(t *testing.T) {
	const size = 1000
	d := NewDiscouragement(size, 24*time.Hour, 3, 4)
	now := time.Unix(1_700_000_000, 0)
	ip := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}) }
	for i := range size {
		d.Add(ip(i), now)
	}
	d.Add(ip(0), now) // discouraged again: now the newest
	for i := size; i < size+size/2; i++ {
		d.Add(ip(i), now)
	}
	if n := d.Len(); n > size {
		t.Fatalf("%d entries, limit %d", n, size)
	}
	for _, c := range []struct {
		i    int
		want bool
	}{
		{0, true},                 // refreshed
		{1, false},                // among the oldest, forgotten
		{size/2 - 1, false},       // the last forgotten
		{size/2 + 1, true},        // the first kept
		{size + size/2 - 1, true}, // the newest
	} {
		if got := d.Has(ip(c.i), now); got != c.want {
			t.Errorf("entry %d discouraged %v, want %v", c.i, got, c.want)
		}
	}
	// A flood of new addresses keeps the list at its size and the newest in.
	for i := 0; i < 20*size; i++ {
		d.Add(ip(100_000+i), now)
	}
	if n := d.Len(); n > size || !d.Has(ip(100_000+20*size-1), now) {
		t.Fatalf("after a flood: %d entries, newest kept %v", n, d.Has(ip(100_000+20*size-1), now))
	}
}
