package blockfiles

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// fixtureUndoRecords returns the de-obfuscated CBlockUndo payloads of the
// fixture's rev file, as fuzz seeds.
func fixtureUndoRecords(tb testing.TB) [][]byte {
	tb.Helper()
	fx := corefiles.LoadFixture(tb)
	raw, err := os.ReadFile(filepath.Join(fx.BlocksDir, "rev00000.dat"))
	if err != nil {
		tb.Fatal(err)
	}
	xorKey(fx.Key).apply(raw, 0)
	var out [][]byte
	for off := 0; off+8 <= len(raw); {
		size := int(binary.LittleEndian.Uint32(raw[off+4:]))
		if size == 0 || off+8+size+32 > len(raw) {
			break
		}
		out = append(out, raw[off+8:off+8+size])
		off += 8 + size + 32
	}
	return out
}

// encodeUndo re-encodes decoded coins with the writer's encoder.
func encodeUndo(txs [][]undoCoin) []byte {
	conv := make([][]corefiles.Coin, len(txs))
	for i, tx := range txs {
		for _, c := range tx {
			conv[i] = append(conv[i], corefiles.Coin{Value: int64(c.Value), Script: c.Script, Height: int32(c.Height), Coinbase: c.Coinbase})
		}
	}
	return corefiles.AppendBlockUndo(nil, conv)
}

// FuzzDecodeBlockUndo: any bytes decode to coins or to an ErrMalformed
// error, never a panic; decoded coins re-encoded by the writer decode to
// the same coins (the reader and the writer agree on every field).
func FuzzDecodeBlockUndo(f *testing.F) {
	for _, rec := range fixtureUndoRecords(f) {
		f.Add(rec)
	}
	f.Add([]byte{0xfe, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		txs, err := decodeBlockUndo(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		again, err := decodeBlockUndo(encodeUndo(txs))
		if err != nil {
			t.Fatalf("re-encoded undo does not decode: %v", err)
		}
		// Heights above 2^31 do not survive the writer's int32; the
		// formats agree on everything a real coin holds.
		for _, tx := range txs {
			for _, c := range tx {
				if c.Height >= 1<<31 || c.Value >= 1<<63 {
					return
				}
			}
		}
		if !reflect.DeepEqual(normalizeCoins(txs), normalizeCoins(again)) {
			t.Fatalf("round trip differs")
		}
	})
}

func normalizeCoins(txs [][]undoCoin) [][]undoCoin {
	out := make([][]undoCoin, len(txs))
	for i, tx := range txs {
		out[i] = make([]undoCoin, len(tx))
		for j, c := range tx {
			c.Script = append([]byte{}, c.Script...)
			out[i][j] = c
		}
	}
	return out
}

// FuzzCompressedScript: one compressed script decodes or fails cleanly;
// what it decodes to compresses back to a script that decodes the same.
func FuzzCompressedScript(f *testing.F) {
	f.Add([]byte{0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add(append([]byte{0x05}, bytes.Repeat([]byte{0x79}, 32)...))
	f.Add(append([]byte{0x04}, bytes.Repeat([]byte{0x01}, 32)...))
	f.Add([]byte{0x81, 0x33})
	f.Add([]byte{0x06})
	f.Fuzz(func(t *testing.T, data []byte) {
		script, used, _, err := readCompressedScript(data, nil)
		if err != nil {
			return
		}
		if used > len(data) {
			t.Fatalf("used %d of %d bytes", used, len(data))
		}
		enc := corefiles.AppendCompressedScript(nil, script)
		again, n, _, err := readCompressedScript(enc, nil)
		if err != nil || n != len(enc) || !bytes.Equal(again, script) {
			t.Fatalf("round trip of %x: %x, %v", script, again, err)
		}
	})
}

// FuzzVarInt: Core's VARINT has one encoding per value, so what decodes
// re-encodes to the bytes read.
func FuzzVarInt(f *testing.F) {
	for _, s := range [][]byte{{0x00}, {0x7f}, {0x80, 0x00}, {0x8e, 0xfe, 0xfe, 0xff, 0x00}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, max := range []uint64{0xffffffff, ^uint64(0)} {
			v, n, err := readVarInt(data, max)
			if err != nil {
				continue
			}
			if v > max {
				t.Fatalf("%d over the maximum %d", v, max)
			}
			if enc := corefiles.AppendVarInt(nil, v); !bytes.Equal(enc, data[:n]) {
				t.Fatalf("VARINT %x decodes to %d, which encodes as %x", data[:n], v, enc)
			}
		}
	})
}

// FuzzBlockRecords: any bytes as a blk file walk to records, zero padding,
// a partial record or garbage without a panic; every record visited lies
// within the file, and reading it back gives a block or an error.
func FuzzBlockRecords(f *testing.F) {
	fx := corefiles.LoadFixture(f)
	raw, err := os.ReadFile(filepath.Join(fx.BlocksDir, "blk00000.dat"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw[:2000], true)
	plain := bytes.Clone(raw[:600])
	xorKey(fx.Key).apply(plain, 0)
	f.Add(plain, false)
	f.Add(append(bytes.Clone(raw[:293]), make([]byte, 20)...), true)
	f.Fuzz(func(t *testing.T, data []byte, obfuscated bool) {
		var key xorKey
		if obfuscated {
			key = xorKey(fx.Key)
		}
		var magic [4]byte
		binary.LittleEndian.PutUint32(magic[:], uint32(chaincfg.RegressionNetParams.Net))
		rw := recordWalk{key: key, magic: magic, minSize: minBlockRecord, maxSize: maxBlockRecord, peek: 80}
		r := bytes.NewReader(data)
		end, _, err := rw.walk(newWindowReader(r, int64(len(data))), 0, func(off int64, size uint32, head []byte) {
			if off+8+int64(size) > int64(len(data)) || len(head) > int(size) {
				t.Fatalf("record at %d of %d bytes overruns %d", off, size, len(data))
			}
			payload, _, err := rw.readRecord(r, off)
			if err != nil {
				t.Fatalf("walked record at %d does not read: %v", off, err)
			}
			_, _ = wirescan.ScanBlock(payload, chainhash.Hash{}) // reads it whole: no panic
		})
		if err != nil || end > int64(len(data)) {
			t.Fatalf("walk ended at %d of %d: %v", end, len(data), err)
		}
	})
}

// A CBlockUndo that declares 2^32 transactions, or a transaction with 2^32
// coins, is refused before anything is allocated for them: decoding costs
// at most a small multiple of the bytes given.
func TestDecodeBlockUndoBoundsDeclaredCounts(t *testing.T) {
	for _, data := range [][]byte{
		{0xff, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00},                    // 2^32 transactions
		{0xfe, 0xff, 0xff, 0xff, 0xff},                                            // 2^32-1 transactions
		{0x01, 0xff, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00},              // one tx of 2^32 coins
		append([]byte{0xfd, 0xff, 0xff}, bytes.Repeat([]byte{0x00}, 100)...),      // 65535 txs, 103 bytes
		append([]byte{0x01, 0xfd, 0xff, 0xff}, bytes.Repeat([]byte{0x06}, 90)...), // 65535 coins, 94 bytes
	} {
		if _, err := decodeBlockUndo(data); !errors.Is(err, ErrMalformed) {
			t.Errorf("%x: %v, want ErrMalformed", data[:min(len(data), 10)], err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range 10 {
			_, _ = decodeBlockUndo(data)
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > uint64(64*len(data)+1024) {
			t.Errorf("%x...: %d bytes allocated per decode of %d bytes", data[:min(len(data), 10)], per, len(data))
		}
	}
}
