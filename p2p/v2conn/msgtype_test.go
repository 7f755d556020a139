package v2conn

import (
	"bytes"
	"testing"
)

// bip324ShortIDs is BIP-324's table of one-byte message types, written out
// from the BIP, not from this package.
var bip324ShortIDs = []string{
	1: "addr", 2: "block", 3: "blocktxn", 4: "cmpctblock", 5: "feefilter",
	6: "filteradd", 7: "filterclear", 8: "filterload", 9: "getblocks",
	10: "getblocktxn", 11: "getdata", 12: "getheaders", 13: "headers",
	14: "inv", 15: "mempool", 16: "merkleblock", 17: "notfound", 18: "ping",
	19: "pong", 20: "sendcmpct", 21: "tx", 22: "getcfilters", 23: "cfilter",
	24: "getcfheaders", 25: "cfheaders", 26: "getcfcheckpt", 27: "cfcheckpt",
	28: "addrv2",
}

func TestShortIDsAreBIP324s(t *testing.T) {
	for id := range 256 {
		want := ""
		if id < len(bip324ShortIDs) {
			want = bip324ShortIDs[id]
		}
		contents := []byte{byte(id), 0xaa, 0xbb}
		cmd, payload, ok := DecodeType(contents)
		switch {
		case id == 0:
			// The long form: covered by TestLongForm.
		case want == "":
			if ok {
				t.Errorf("unassigned ID %d decoded as %q", id, cmd)
			}
		default:
			if !ok || cmd != want || !bytes.Equal(payload, []byte{0xaa, 0xbb}) {
				t.Errorf("ID %d decoded as %q %x %v, want %q", id, cmd, payload, ok, want)
			}
			enc, ok := AppendType(nil, want)
			if !ok || !bytes.Equal(enc, []byte{byte(id)}) {
				t.Errorf("%s encoded as %x, want %02x", want, enc, id)
			}
			if TypeSize(want) != 1 {
				t.Errorf("TypeSize(%s) = %d", want, TypeSize(want))
			}
		}
	}
}

// Every command cfindexd sends or reads travels as BIP-324 says: a short ID
// where the table has one, the long form otherwise.
func TestCommandsOfTheServer(t *testing.T) {
	long := func(cmd string) []byte {
		b := make([]byte, 13)
		copy(b[1:], cmd)
		return b
	}
	for _, tc := range []struct {
		command string
		want    []byte
	}{
		{"getcfilters", []byte{22}}, {"cfilter", []byte{23}},
		{"getcfheaders", []byte{24}}, {"cfheaders", []byte{25}},
		{"getcfcheckpt", []byte{26}}, {"cfcheckpt", []byte{27}},
		{"headers", []byte{13}}, {"getheaders", []byte{12}}, {"inv", []byte{14}},
		{"getdata", []byte{11}}, {"notfound", []byte{17}}, {"tx", []byte{21}},
		{"block", []byte{2}}, {"merkleblock", []byte{16}}, {"filterload", []byte{8}},
		{"filteradd", []byte{6}}, {"filterclear", []byte{7}}, {"ping", []byte{18}},
		{"pong", []byte{19}}, {"feefilter", []byte{5}}, {"addr", []byte{1}},
		{"addrv2", []byte{28}}, {"mempool", []byte{15}}, {"getblocks", []byte{9}},
		{"version", long("version")}, {"verack", long("verack")},
		{"sendheaders", long("sendheaders")}, {"wtxidrelay", long("wtxidrelay")},
		{"sendaddrv2", long("sendaddrv2")}, {"getaddr", long("getaddr")},
		{"abcdefghijkl", long("abcdefghijkl")},
	} {
		t.Run(tc.command, func(t *testing.T) {
			got, ok := AppendType([]byte{0xff}, tc.command)
			if !ok || !bytes.Equal(got, append([]byte{0xff}, tc.want...)) {
				t.Fatalf("encoded as %x (%v), want ff%x", got, ok, tc.want)
			}
			if TypeSize(tc.command) != len(tc.want) {
				t.Fatalf("TypeSize %d, want %d", TypeSize(tc.command), len(tc.want))
			}
			cmd, payload, ok := DecodeType(append(tc.want, 1, 2, 3))
			if !ok || cmd != tc.command || !bytes.Equal(payload, []byte{1, 2, 3}) {
				t.Fatalf("decoded as %q %x %v", cmd, payload, ok)
			}
		})
	}
}

func TestLongForm(t *testing.T) {
	for _, tc := range []struct {
		name     string
		contents []byte
		command  string
		ok       bool
	}{
		{"empty contents", nil, "", false},
		{"zero byte only", []byte{0}, "", false},
		{"12 bytes", append([]byte{0}, "version\x00\x00\x00\x00"...), "", false},
		{"no payload", append([]byte{0}, "verack\x00\x00\x00\x00\x00\x00"...), "verack", true},
		{"12 letters", append([]byte{0}, "abcdefghijkl"...), "abcdefghijkl", true},
		{"empty command", make([]byte, 13), "", false},
		{"byte after padding", append([]byte{0}, "ping\x00\x00\x00\x00\x00\x00\x00x"...), "", false},
		{"control character", append([]byte{0}, "pi\nng\x00\x00\x00\x00\x00\x00\x00"...), "", false},
		{"high byte", append([]byte{0}, "pi\xffng\x00\x00\x00\x00\x00\x00\x00"...), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, _, ok := DecodeType(tc.contents)
			if ok != tc.ok || cmd != tc.command {
				t.Fatalf("got %q %v, want %q %v", cmd, ok, tc.command, tc.ok)
			}
		})
	}
	for _, bad := range []string{"", "thirteenbytes", "a\x00b", "tab\t"} {
		if _, ok := AppendType(nil, bad); ok {
			t.Errorf("AppendType accepted %q", bad)
		}
	}
}

// Decoding the server's commands allocates nothing.
func TestDecodeTypeDoesNotAllocate(t *testing.T) {
	version, _ := AppendType(nil, "version")
	filters, _ := AppendType(nil, "getcfilters")
	allocs := testing.AllocsPerRun(100, func() {
		_, _, _ = DecodeType(version)
		_, _, _ = DecodeType(filters)
	})
	if allocs != 0 {
		t.Fatalf("%.0f allocations", allocs)
	}
}

// FuzzDecodeType: decode, encode, decode gives the same message.
func FuzzDecodeType(f *testing.F) {
	f.Add([]byte{22, 0, 1, 2})
	f.Add(append([]byte{0}, "version\x00\x00\x00\x00\x00\x01"...))
	f.Add([]byte{0})
	f.Add([]byte{200})
	f.Fuzz(func(t *testing.T, contents []byte) {
		cmd, payload, ok := DecodeType(contents)
		if !ok {
			return
		}
		enc, ok := AppendType(nil, cmd)
		if !ok {
			t.Fatalf("decoded command %q does not encode", cmd)
		}
		cmd2, payload2, ok := DecodeType(append(enc, payload...))
		if !ok || cmd2 != cmd || !bytes.Equal(payload2, payload) {
			t.Fatalf("round trip: %q %x -> %q %x", cmd, payload, cmd2, payload2)
		}
	})
}
