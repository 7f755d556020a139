package prevouts

// The reference (pre-streaming) getblock-3 decoder; see
// parseVerboseBlockReference.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/nodeclient"
)

// verboseBlock holds the only members of a getblock verbosity 3 reply this
// package needs. encoding/json skips every other member (asm, desc,
// addresses, amounts...) without building values for them, so the reply is
// never turned into a generic JSON tree.
type verboseBlock struct {
	Hash       string      `json:"hash"`
	Version    int32       `json:"version"`
	PrevHash   string      `json:"previousblockhash"`
	MerkleRoot string      `json:"merkleroot"`
	Time       int64       `json:"time"`
	Bits       string      `json:"bits"`
	Nonce      uint32      `json:"nonce"`
	Tx         []verboseTx `json:"tx"`
}

type verboseTx struct {
	Hex string       `json:"hex"`
	Vin []verboseVin `json:"vin"`
}

type verboseVin struct {
	Coinbase *string `json:"coinbase"`
	Prevout  *struct {
		ScriptPubKey struct {
			Hex string `json:"hex"`
		} `json:"scriptPubKey"`
	} `json:"prevout"`
}

// parseVerboseBlockReference is the getblock-3 decoder cfindexd used
// before decodeGetBlock3: encoding/json into minimal structs, then
// wire.MsgTx per transaction. It stays as the reference the streaming
// decoder is tested and benchmarked against. It decodes the "result" of
// getblock <hash> 3 into the block and the spent output scripts of its
// non-coinbase inputs in block order. The header is rebuilt from the JSON
// members and must hash to want; the transactions come from each tx's
// "hex" and must match the header's merkle root.
func parseVerboseBlockReference(data []byte, want chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	var vb verboseBlock
	if err := json.Unmarshal(data, &vb); err != nil {
		return nil, nil, fmt.Errorf("%w: getblock 3 %s: %v", nodeclient.ErrMalformed, want, err)
	}
	return vb.build(want)
}

func (vb *verboseBlock) build(want chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	fail := func(format string, args ...any) (*wire.MsgBlock, [][]byte, error) {
		return nil, nil, fmt.Errorf("%w: getblock 3 %s: %s", nodeclient.ErrMalformed, want, fmt.Sprintf(format, args...))
	}
	var hdr wire.BlockHeader
	hdr.Version = vb.Version
	if vb.PrevHash != "" {
		h, err := chainhash.NewHashFromStr(vb.PrevHash)
		if err != nil {
			return fail("previousblockhash: %v", err)
		}
		hdr.PrevBlock = *h
	}
	mr, err := chainhash.NewHashFromStr(vb.MerkleRoot)
	if err != nil {
		return fail("merkleroot: %v", err)
	}
	hdr.MerkleRoot = *mr
	hdr.Timestamp = time.Unix(vb.Time, 0)
	bits, err := strconv.ParseUint(vb.Bits, 16, 32)
	if err != nil {
		return fail("bits %q: %v", vb.Bits, err)
	}
	hdr.Bits = uint32(bits)
	hdr.Nonce = vb.Nonce
	if got := hdr.BlockHash(); got != want {
		return fail("header hashes to %s", got)
	}
	if len(vb.Tx) == 0 {
		return fail("no transactions")
	}

	blk := &wire.MsgBlock{Header: hdr, Transactions: make([]*wire.MsgTx, len(vb.Tx))}
	nin := 0
	for i := 1; i < len(vb.Tx); i++ {
		nin += len(vb.Tx[i].Vin)
	}
	prevScripts := make([][]byte, 0, nin)
	var raw []byte
	for i := range vb.Tx {
		vt := &vb.Tx[i]
		n := hex.DecodedLen(len(vt.Hex))
		if cap(raw) < n {
			raw = make([]byte, n)
		}
		raw = raw[:n]
		if _, err := hex.Decode(raw, []byte(vt.Hex)); err != nil {
			return fail("tx %d hex: %v", i, err)
		}
		tx := new(wire.MsgTx)
		r := bytes.NewReader(raw)
		if err := tx.Deserialize(r); err != nil {
			return fail("tx %d: %v", i, err)
		}
		if r.Len() != 0 {
			return fail("tx %d: %d trailing bytes", i, r.Len())
		}
		if len(vt.Vin) != len(tx.TxIn) {
			return fail("tx %d: %d vin entries for %d inputs", i, len(vt.Vin), len(tx.TxIn))
		}
		blk.Transactions[i] = tx
		for j := range vt.Vin {
			vin := &vt.Vin[j]
			if i == 0 {
				if vin.Coinbase == nil {
					return fail("first transaction is not a coinbase")
				}
				continue
			}
			if vin.Prevout == nil {
				// Core omits prevout when the block's undo data is gone.
				return nil, nil, fmt.Errorf("%w: getblock 3 %s: tx %d input %d has no prevout (undo data missing)", nodeclient.ErrPruned, want, i, j)
			}
			script, err := hex.DecodeString(vin.Prevout.ScriptPubKey.Hex)
			if err != nil {
				return fail("tx %d input %d prevout script: %v", i, j, err)
			}
			prevScripts = append(prevScripts, script)
		}
	}
	if got := merkleRoot(blk.Transactions); got != hdr.MerkleRoot {
		return fail("transactions do not match the merkle root")
	}
	return blk, prevScripts, nil
}

// merkleRoot computes the block merkle root over txids (Bitcoin's
// duplicate-last-on-odd rule).
func merkleRoot(txs []*wire.MsgTx) chainhash.Hash {
	level := make([]chainhash.Hash, len(txs))
	for i, tx := range txs {
		level[i] = tx.TxHash()
	}
	var buf [2 * chainhash.HashSize]byte
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		next := level[:len(level)/2]
		for i := range next {
			copy(buf[:chainhash.HashSize], level[2*i][:])
			copy(buf[chainhash.HashSize:], level[2*i+1][:])
			next[i] = chainhash.DoubleHashH(buf[:])
		}
		level = next
	}
	return level[0]
}
