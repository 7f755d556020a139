package wirescan

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Smallest serializations, the units declared counts are checked in.
const (
	// OutPointSize is a previous output: txid and index.
	OutPointSize = chainhash.HashSize + 4
	// MinTxInSize is an input with an empty signature script: outpoint,
	// script length and sequence.
	MinTxInSize = OutPointSize + 1 + 4
	// MinTxOutSize is an output with an empty script: value and length.
	MinTxOutSize = 8 + 1
	// MinTxSize is a transaction with no inputs and no outputs: version,
	// two empty counts and lock time.
	MinTxSize = 4 + 1 + 1 + 4
	// minWitnessItemsSize is an input's empty witness: its item count.
	minWitnessItemsSize = 1
)

// Tx is where a transaction read by Reader.Tx lies in the Reader's bytes.
type Tx struct {
	// Start and End bound the whole serialization, witnesses included.
	Start, End int
	// BodyStart and BodyEnd bound the input and output lists (from the
	// input count to the last output), which the txid covers together with
	// the version before them and the lock time after the witnesses.
	BodyStart, BodyEnd int
	// Witness reports the BIP-144 encoding: a marker and flag after the
	// version and the inputs' witnesses after the outputs.
	Witness bool
}

// Tx reads one transaction. When outs is non-nil it appends the output
// scripts to *outs; when spends is non-nil, the inputs' previous outpoints
// to *spends. Nothing else is allocated, however many inputs, outputs and
// witness items the transaction declares. Errors name the field that
// failed and wrap the sentinels of this package.
func (r *Reader) Tx(outs *[][]byte, spends *[]wire.OutPoint) (Tx, error) {
	t := Tx{Start: r.off}
	if err := r.Skip(4); err != nil { // version
		return Tx{}, err
	}
	if r.off < len(r.b) && r.b[r.off] == 0x00 {
		// A zero input count is the BIP-144 marker; the flag follows.
		switch {
		case r.lenient:
			t.Witness = r.off+1 < len(r.b) && r.b[r.off+1] != 0
		case r.off+1 >= len(r.b):
			return Tx{}, ErrTruncated
		case r.b[r.off+1] != 0x01:
			return Tx{}, fmt.Errorf("%w: flag %#x", ErrWitnessFlag, r.b[r.off+1])
		default:
			t.Witness = true
		}
		if t.Witness {
			r.off += 2
		}
	}
	t.BodyStart = r.off
	nin, err := r.Count(MinTxInSize)
	if err != nil {
		return Tx{}, fmt.Errorf("input count: %w", err)
	}
	for range nin {
		if r.off+OutPointSize > len(r.b) {
			return Tx{}, ErrTruncated
		}
		if spends != nil {
			var op wire.OutPoint
			copy(op.Hash[:], r.b[r.off:r.off+chainhash.HashSize])
			op.Index = binary.LittleEndian.Uint32(r.b[r.off+chainhash.HashSize:])
			*spends = append(*spends, op)
		}
		r.off += OutPointSize
		if _, err := r.Bytes(); err != nil {
			return Tx{}, fmt.Errorf("signature script: %w", err)
		}
		if err := r.Skip(4); err != nil { // sequence
			return Tx{}, err
		}
	}
	nout, err := r.Count(MinTxOutSize)
	if err != nil {
		return Tx{}, fmt.Errorf("output count: %w", err)
	}
	for range nout {
		if err := r.Skip(8); err != nil { // value
			return Tx{}, err
		}
		script, err := r.Bytes()
		if err != nil {
			return Tx{}, fmt.Errorf("output script: %w", err)
		}
		if outs != nil {
			*outs = append(*outs, script)
		}
	}
	t.BodyEnd = r.off
	if t.Witness {
		anyWitness := false
		for range nin {
			items, err := r.Count(minWitnessItemsSize)
			if err != nil {
				return Tx{}, fmt.Errorf("witness item count: %w", err)
			}
			anyWitness = anyWitness || items > 0
			for range items {
				if _, err := r.Bytes(); err != nil {
					return Tx{}, fmt.Errorf("witness item: %w", err)
				}
			}
		}
		if !anyWitness && !r.lenient {
			return Tx{}, ErrSuperfluousWitness
		}
	}
	if err := r.Skip(4); err != nil { // lock time
		return Tx{}, err
	}
	t.End = r.off
	return t, nil
}

// TxID returns the txid of t, a transaction this Reader read: the double
// SHA-256 of its serialization without marker, flag and witnesses. It
// allocates only the first time it hashes a witness transaction.
func (r *Reader) TxID(t Tx) chainhash.Hash {
	if !t.Witness {
		return chainhash.DoubleHashH(r.b[t.Start:t.End])
	}
	if r.txid == nil {
		r.txid = &txidHasher{sha: sha256.New()}
	}
	h := r.txid
	h.sha.Reset()
	h.sha.Write(r.b[t.Start : t.Start+4])
	h.sha.Write(r.b[t.BodyStart:t.BodyEnd])
	h.sha.Write(r.b[t.End-4 : t.End])
	return chainhash.Hash(sha256.Sum256(h.sha.Sum(h.first[:0])))
}

// txidHasher hashes the txid of a witness transaction in three pieces. The
// first round's sum lives beside the hasher: a buffer on the stack would
// escape through the hash.Hash interface and cost an allocation per
// transaction.
type txidHasher struct {
	sha   hash.Hash
	first [sha256.Size]byte
}

// WTxID returns the wtxid of t, a transaction this Reader read: the double
// SHA-256 of its whole serialization (the txid when it has no witness).
func (r *Reader) WTxID(t Tx) chainhash.Hash {
	return chainhash.DoubleHashH(r.b[t.Start:t.End])
}
