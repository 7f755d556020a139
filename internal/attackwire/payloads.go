package attackwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"strings"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// compactSize is n as a Bitcoin CompactSize.
func compactSize(n uint64) []byte { return wirescan.AppendCompactSize(nil, n) }

// HugeCountPayloads are payloads of every message a peer can send that
// declare far more elements (or bytes) than they carry, by name
// ("<command> of …"; CommandOf gives the command). Each must cost its
// receiver at most a small multiple of its own length, before or after the
// handshake, decoded or discarded.
func HugeCountPayloads() map[string][]byte {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	outpoint := make([]byte, 36)
	me := wire.NewNetAddressIPPort(net.IPv4zero, 0, 0)
	var version bytes.Buffer
	if err := wire.NewMsgVersion(me, me, 1, 2).BtcEncode(&version, wire.ProtocolVersion, wire.BaseEncoding); err != nil {
		panic(err) // a constant message always encodes
	}
	return map[string][]byte{
		"version user agent of 32 MB": cat(version.Bytes()[:80], compactSize(32_000_000)),
		"getheaders of 500 locators":  cat(le32(70016), compactSize(500), make([]byte, 32)),
		"inv of 50,000 entries":       compactSize(50_000),
		"getdata of 50,000 entries":   compactSize(50_000),
		"notfound of 50,000 entries":  compactSize(50_000),
		"tx of 3.7 million outputs":   cat(le32(2), compactSize(1), outpoint, compactSize(0), le32(0), compactSize(3_700_000)),
		"tx of 3.7 million inputs":    cat(le32(2), compactSize(3_700_000)),
		"tx of 4 million witness items": cat(le32(2), []byte{0, 1}, compactSize(1), outpoint, compactSize(0), le32(0),
			compactSize(1), make([]byte, 8), compactSize(0), compactSize(4_000_000)),
		"tx witness item of 4 MB": cat(le32(2), []byte{0, 1}, compactSize(1), outpoint, compactSize(0), le32(0),
			compactSize(1), make([]byte, 8), compactSize(0), compactSize(1), compactSize(4_000_000)),
		"tx script of 4 MB":             cat(le32(2), compactSize(1), outpoint, compactSize(4_000_000)),
		"headers of 2,000,000 entries":  compactSize(2_000_000),
		"addr of 1,000,000 entries":     compactSize(1_000_000),
		"addrv2 of 1,000,000 entries":   compactSize(1_000_000),
		"cfheaders of 1,000,000 hashes": cat([]byte{0}, make([]byte, 64), compactSize(1_000_000)),
		"cfcheckpt of 1,000,000 hashes": cat([]byte{0}, make([]byte, 32), compactSize(1_000_000)),
		"block of 1,000,000 txs":        cat(make([]byte, 80), compactSize(1_000_000)),
		"filterload of 36,000 bytes":    compactSize(36_000),
		"filteradd of 520 bytes":        compactSize(520),
		"getblocks of 500 locators":     cat(le32(70016), compactSize(500), make([]byte, 32)),
	}
}

// CommandOf is the command of a HugeCountPayloads name: its first word.
func CommandOf(name string) string {
	cmd, _, ok := strings.Cut(name, " ")
	if !ok {
		panic(fmt.Sprintf("attackwire: payload name %q has no command", name))
	}
	return cmd
}

// Header is a frame header for cmd on network magic net declaring length
// payload bytes, with a zero checksum.
func Header(net wire.BitcoinNet, cmd string, length uint32) []byte {
	b := make([]byte, wire.MessageHeaderSize)
	binary.LittleEndian.PutUint32(b[0:4], uint32(net))
	copy(b[4:16], cmd)
	binary.LittleEndian.PutUint32(b[16:20], length)
	return b
}

// Frame is payload framed as cmd on network magic net, checksum included.
func Frame(net wire.BitcoinNet, cmd string, payload []byte) []byte {
	b := Header(net, cmd, uint32(len(payload)))
	first := sha256.Sum256(payload)
	sum := sha256.Sum256(first[:])
	copy(b[20:24], sum[:4])
	return append(b, payload...)
}
