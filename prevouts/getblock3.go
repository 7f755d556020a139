package prevouts

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/jsonscan"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// A getblock <hash> 3 reply (Bitcoin Core ≥ 23) is JSON about ten times
// the size of the block: per transaction its decoded inputs and outputs
// (asm, descriptors, addresses, amounts) and its "hex", per input the
// spent output ("prevout") with its scriptPubKey. A filter needs only the
// block (the header members and each transaction's hex) and each input's
// prevout.scriptPubKey.hex. decodeGetBlock3Reply reads the reply as it arrives
// from the socket through a 64 KiB buffer, decodes those strings' hex
// straight into the block and script buffers it returns, and skips
// everything else without building anything: no encoding/json reflection,
// no copy of the document, memory in proportion to the block rather than
// to the JSON.
//
// Skipped values are only scanned for the end of their strings and
// brackets, so JSON that is malformed inside them may pass; what is used
// is checked: the members it reads must have the types Core sends (a
// repeated member, or a member name differing only in case, is rejected),
// the rebuilt header must hash to the block asked for, the transactions
// must hash to its merkle root and split exactly where the JSON's "hex"
// strings do, every transaction must have as many "vin" entries as inputs,
// and every non-coinbase input a prevout (Core omits it once the block's
// undo data is pruned: ErrPruned). Bounds hold whatever the bytes say: a
// block of at most 4,000,000 bytes, prevout scripts of at most 10,000
// bytes (a longer one cannot be spent), nesting at most jsonscan.MaxDepth
// deep, an error object at most 64 KiB. The lexing is internal/jsonscan's.
const (
	maxG3BlockBytes   = 4_000_000
	maxG3ScriptBytes  = 10_000
	maxG3PrevoutBytes = 64 << 20
	maxG3ErrorBytes   = 64 << 10
	g3BufferBytes     = 64 << 10
	// g3Reserve is room before the transactions for the header and the
	// transaction count, written once the count is known.
	g3Reserve = wire.MaxBlockHeaderPayload + 9
)

// g3Buffers recycles the decoders' read buffers.
var g3Buffers = sync.Pool{New: func() any { b := make([]byte, g3BufferBytes); return &b }}

// decodeGetBlock3Reply reads a whole JSON-RPC reply to getblock <want> 3
// from r (the HTTP body, status its HTTP status) and returns the block read
// in place with the spent scripts of its non-coinbase inputs. A JSON-RPC
// error object comes back as *RPCError.
func decodeGetBlock3Reply(r io.Reader, status int, want chainhash.Hash) (FetchedBlock, error) {
	buf := g3Buffers.Get().(*[]byte)
	defer g3Buffers.Put(buf)
	d := g3Decoder{want: want}
	d.Reset(r, (*buf)[:0])
	fb, err := d.reply(status)
	if err != nil {
		var rpcErr *nodeclient.RPCError
		if errors.As(err, &rpcErr) || errors.Is(err, nodeclient.ErrPruned) {
			return FetchedBlock{}, err
		}
		return FetchedBlock{}, fmt.Errorf("%w: getblock %s 3: %v", nodeclient.ErrMalformed, want, err)
	}
	return fb, nil
}

// g3Decoder is one reply being decoded.
type g3Decoder struct {
	jsonscan.Scanner
	want chainhash.Hash

	hdr wire.BlockHeader

	// raw holds g3Reserve bytes, then every transaction's bytes; txEnd[i]
	// is where transaction i ends in raw and txVins[i] its vin count.
	raw    []byte
	txEnd  []uint32
	txVins []uint32
	// prevs holds the prevout scripts back to back; prevEnd the end of
	// each (non-coinbase inputs in block order).
	prevs   []byte
	prevEnd []uint32
	// key holds the member name object is at, until its value is read
	// (a nested object reuses it). It is longer than every name object
	// reads: a longer one comes back empty and is skipped.
	key [24]byte
}

// The block members read, in the order result passes them to object.
const (
	g3Version = iota
	g3Prev
	g3Merkle
	g3Time
	g3Bits
	g3Nonce
	g3Tx
	// g3HeaderNeeded are the members every block has (the genesis block
	// has no previousblockhash).
	g3HeaderNeeded = 1<<g3Version | 1<<g3Merkle | 1<<g3Time | 1<<g3Bits | 1<<g3Nonce | 1<<g3Tx
)

// reply reads the envelope {"result":…,"error":…,"id":…}.
func (d *g3Decoder) reply(status int) (FetchedBlock, error) {
	const resultMember, errorMember = 0, 1
	var fb FetchedBlock
	have, err := d.object([]string{resultMember: "result", errorMember: "error"}, true, func(i int) error {
		if i == resultMember {
			var err error
			fb, err = d.result()
			return err
		}
		var rpcErr nodeclient.RPCError
		if err := json.NewDecoder(io.LimitReader(d.Rest(), maxG3ErrorBytes)).Decode(&rpcErr); err != nil {
			return fmt.Errorf("error object: %v", err)
		}
		rpcErr.Method = "getblock"
		return &rpcErr
	})
	if err != nil {
		return FetchedBlock{}, err
	}
	if status != http.StatusOK {
		return FetchedBlock{}, fmt.Errorf("HTTP %d without an error object", status)
	}
	if have&(1<<resultMember) == 0 {
		return FetchedBlock{}, errors.New("null or missing result")
	}
	return fb, nil
}

// result reads the block object and assembles the block.
func (d *g3Decoder) result() (FetchedBlock, error) {
	d.raw = make([]byte, g3Reserve, g3Reserve+8<<10)
	names := []string{
		g3Version: "version", g3Prev: "previousblockhash", g3Merkle: "merkleroot",
		g3Time: "time", g3Bits: "bits", g3Nonce: "nonce", g3Tx: "tx",
	}
	have, err := d.object(names, false, func(i int) error {
		var err error
		switch i {
		case g3Version:
			var v int64
			v, err = d.Int(32)
			d.hdr.Version = int32(v)
		case g3Prev:
			d.hdr.PrevBlock, err = d.hash()
		case g3Merkle:
			d.hdr.MerkleRoot, err = d.hash()
		case g3Time:
			var v int64
			v, err = d.Int(64)
			d.hdr.Timestamp = time.Unix(v, 0)
		case g3Bits:
			var v uint64
			v, err = d.hexUint32()
			d.hdr.Bits = uint32(v)
		case g3Nonce:
			d.hdr.Nonce, err = d.Uint32()
		case g3Tx:
			err = d.txs()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
		return nil
	})
	if err != nil {
		return FetchedBlock{}, err
	}
	if have&g3HeaderNeeded != g3HeaderNeeded {
		return FetchedBlock{}, fmt.Errorf("header or transactions missing (members %06b)", have)
	}
	return d.assemble()
}

// txs reads the "tx" array.
func (d *g3Decoder) txs() error {
	if err := d.Open('['); err != nil {
		return err
	}
	return d.Elements(func() error {
		const txHex, txVin = 0, 1
		i := len(d.txEnd)
		have, err := d.object([]string{txHex: "hex", txVin: "vin"}, false, func(member int) error {
			if member == txVin {
				return d.vins(i)
			}
			if err := d.Open('"'); err != nil {
				return err
			}
			var err error
			if d.raw, err = d.HexString(d.raw, g3Reserve+maxG3BlockBytes); err != nil {
				return fmt.Errorf("hex: %w", err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("transaction %d: %w", i, err)
		}
		if have != 1<<txHex|1<<txVin {
			return fmt.Errorf("transaction %d: no hex or no vin", i)
		}
		d.txEnd = append(d.txEnd, uint32(len(d.raw)))
		return nil
	})
}

// vins reads transaction i's "vin" array.
func (d *g3Decoder) vins(i int) error {
	if err := d.Open('['); err != nil {
		return err
	}
	n := uint32(0)
	err := d.Elements(func() error {
		// A null coinbase or prevout counts as none.
		const vinCoinbase, vinPrevout = 0, 1
		have, err := d.object([]string{vinCoinbase: "coinbase", vinPrevout: "prevout"}, true, func(member int) error {
			if member == vinPrevout && i > 0 {
				return d.prevout()
			}
			return d.SkipValue() // the coinbase spends nothing
		})
		if err != nil {
			return fmt.Errorf("input %d: %w", n, err)
		}
		switch {
		case i == 0 && have&(1<<vinCoinbase) == 0:
			return errors.New("first transaction is not a coinbase")
		case i > 0 && have&(1<<vinPrevout) == 0:
			// Core omits prevout when the block's undo data is gone.
			return fmt.Errorf("%w: getblock %s 3: transaction %d input %d has no prevout (undo data missing)", nodeclient.ErrPruned, d.want, i, n)
		}
		n++
		// Every input costs at least 41 bytes of the block.
		if n > maxG3BlockBytes/wirescan.MinTxInSize {
			return errors.New("more inputs than a block can hold")
		}
		return nil
	})
	d.txVins = append(d.txVins, n)
	return err
}

// prevout reads an input's "prevout" object for its scriptPubKey.hex.
func (d *g3Decoder) prevout() error {
	before := len(d.prevEnd)
	_, err := d.object([]string{"scriptPubKey"}, false, func(int) error {
		_, err := d.object([]string{"hex"}, false, func(int) error {
			if err := d.Open('"'); err != nil {
				return err
			}
			start := len(d.prevs)
			var err error
			if d.prevs, err = d.HexString(d.prevs, min(start+maxG3ScriptBytes, maxG3PrevoutBytes)); err != nil {
				return fmt.Errorf("prevout script: %w", err)
			}
			d.prevEnd = append(d.prevEnd, uint32(len(d.prevs)))
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	if len(d.prevEnd) != before+1 {
		return errors.New("prevout without scriptPubKey.hex")
	}
	return nil
}

// assemble writes the header and transaction count in front of the
// transactions, reads them in place, and checks them against the header
// and the JSON.
func (d *g3Decoder) assemble() (FetchedBlock, error) {
	ntx := len(d.txEnd)
	if ntx == 0 {
		return FetchedBlock{}, errors.New("no transactions")
	}
	var count [wirescan.MaxCompactSizeLen]byte
	nc := wirescan.PutCompactSize(count[:], uint64(ntx))
	start := g3Reserve - wire.MaxBlockHeaderPayload - nc
	var hdr bytes.Buffer
	hdr.Grow(wire.MaxBlockHeaderPayload)
	if err := d.hdr.Serialize(&hdr); err != nil {
		return FetchedBlock{}, fmt.Errorf("header: %v", err)
	}
	copy(d.raw[start:], hdr.Bytes())
	copy(d.raw[start+wire.MaxBlockHeaderPayload:], count[:nc])
	raw := d.raw[start:]
	hash := chainhash.DoubleHashH(raw[:wire.MaxBlockHeaderPayload])
	if hash != d.want {
		return FetchedBlock{}, fmt.Errorf("header hashes to %s", hash)
	}

	// Read every transaction where its "hex" was, so the JSON's split is
	// the block's, counting its inputs.
	s := wirescan.NewReader(d.raw[g3Reserve:])
	txids := make([]chainhash.Hash, ntx)
	outs := make([][]byte, 0, 2*ntx)
	spends := make([]wire.OutPoint, 0, len(d.prevEnd))
	for i := range ntx {
		before := len(spends)
		t, err := s.Tx(&outs, &spends)
		if err != nil {
			return FetchedBlock{}, fmt.Errorf("transaction %d: %v", i, err)
		}
		txids[i] = s.TxID(t)
		if end := g3Reserve + s.Offset(); end != int(d.txEnd[i]) {
			return FetchedBlock{}, fmt.Errorf("transaction %d: its hex holds %d bytes more than one transaction", i, int(d.txEnd[i])-end)
		}
		if got := len(spends) - before; got != int(d.txVins[i]) {
			return FetchedBlock{}, fmt.Errorf("transaction %d: %d vin entries for %d inputs", i, d.txVins[i], got)
		}
		if i == 0 {
			spends = spends[:0] // the coinbase spends nothing
		}
	}
	if len(spends) != len(d.prevEnd) {
		return FetchedBlock{}, fmt.Errorf("%d prevouts for %d inputs", len(d.prevEnd), len(spends))
	}
	if root := wirescan.MerkleRoot(txids); root != d.hdr.MerkleRoot {
		return FetchedBlock{}, errors.New("transactions do not match the merkle root")
	}
	prev := make([][]byte, len(d.prevEnd))
	from := uint32(0)
	for i, end := range d.prevEnd {
		prev[i] = d.prevs[from:end:end]
		from = end
	}
	return FetchedBlock{Header: d.hdr, Hash: hash, OutputScripts: outs, PrevScripts: prev, Raw: raw}, nil
}

// equalFoldAny reports whether name equals one of names ignoring case:
// a member Core never sends that encoding/json would take for one we
// read.
func equalFoldAny(name []byte, names ...string) bool {
	for _, n := range names {
		if len(n) == len(name) && bytes.EqualFold(name, []byte(n)) {
			return true
		}
	}
	return false
}

// object reads a JSON object whose members names[i] are read at most once
// each, by read(i), which must consume the value; it returns the members
// read, bit i for names[i]. A repeated member is an error, and so is one
// whose name equals one of names but for case (Core never sends one, and
// encoding/json would take it for ours); other members are skipped. With
// nullAbsent a null value is consumed as if the member were absent (a
// later one with a value is still read).
func (d *g3Decoder) object(names []string, nullAbsent bool, read func(i int) error) (uint32, error) {
	if err := d.Open('{'); err != nil {
		return 0, err
	}
	var have uint32
	err := d.Items('}', "a member", func() error {
		if err := d.Open('"'); err != nil {
			return err
		}
		name, err := d.Name(d.key[:])
		if err != nil {
			return err
		}
		if err := d.Open(':'); err != nil {
			return err
		}
		for i, n := range names {
			if string(name) != n {
				continue
			}
			if have&(1<<i) != 0 {
				return fmt.Errorf("repeated member %q", n)
			}
			if nullAbsent {
				if null, err := d.Null(); err != nil || null {
					return err
				}
			}
			have |= 1 << i
			return read(i)
		}
		if equalFoldAny(name, names...) {
			return fmt.Errorf("member %q", name)
		}
		return d.SkipValue()
	})
	return have, err
}

// hash reads a block hash in display (byte-reversed) hex.
func (d *g3Decoder) hash() (chainhash.Hash, error) {
	var buf [2 * chainhash.HashSize]byte
	s, err := d.SmallString(buf[:])
	if err != nil {
		return chainhash.Hash{}, err
	}
	var h chainhash.Hash
	if len(s) != len(buf) {
		return h, fmt.Errorf("hash of %d hex digits", len(s))
	}
	if _, err := hex.Decode(h[:], s); err != nil {
		return h, err
	}
	for i := range chainhash.HashSize / 2 {
		h[i], h[chainhash.HashSize-1-i] = h[chainhash.HashSize-1-i], h[i]
	}
	return h, nil
}

// hexUint32 reads a string of hex digits ("bits") as a 32-bit number.
func (d *g3Decoder) hexUint32() (uint64, error) {
	var buf [16]byte
	s, err := d.SmallString(buf[:])
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(s), 16, 32)
}
