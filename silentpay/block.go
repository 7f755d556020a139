package silentpay

import (
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// TxTweak is the tweak of one transaction of a block.
type TxTweak struct {
	// TxIndex is the transaction's position in its block (the coinbase is
	// 0 and never has a tweak).
	TxIndex uint32
	Tweak
}

// Block is a block's silent-payment data: what the index stores and the
// commitment covers.
type Block struct {
	Hash chainhash.Hash
	// Tweaks holds the tweak of every transaction that has one, in block
	// order.
	Tweaks []TxTweak
	// Filter is the taproot filter in BIP-158 wire form (N, then the
	// Golomb-coded set).
	Filter []byte
}

// BlockBuilder reads blocks into Blocks, keeping its scratch buffers from
// one block to the next, as gcs.BasicBuilder does. Its zero value is ready
// to use; it is not safe for concurrent use (use one per worker).
type BlockBuilder struct {
	ins    []Input
	items  [][]byte // witness items of the transaction being read
	spans  []int    // per input, the end of its witness in items
	outs   []Output
	filter gcs.BasicBuilder
	batch  tweakBatch
}

// Build reads raw, one serialized block (as prevouts.FetchedBlock.Raw),
// with prevScripts the script each non-coinbase input spends in block
// order (as FetchedBlock.PrevScripts), and returns its tweaks and taproot
// filter. The Block shares no memory with raw or the builder. It fails
// with ErrMalformedBlock or ErrPrevScriptCount, never panics, and
// allocates from no count it reads without checking it against the bytes
// left.
func (b *BlockBuilder) Build(raw []byte, prevScripts [][]byte) (Block, error) {
	defer b.release()
	r := wirescan.NewReader(raw)
	header, ntx, err := r.Block()
	if err != nil {
		return Block{}, fmt.Errorf("%w: %w", ErrMalformedBlock, err)
	}
	blk := Block{Hash: chainhash.DoubleHashH(header)}
	b.filter.Reset()
	for i := range ntx {
		if err := b.readTx(&r); err != nil {
			return Block{}, fmt.Errorf("%w: block %s transaction %d: %w", ErrMalformedBlock, blk.Hash, i, err)
		}
		if i == 0 {
			continue // the coinbase spends nothing and never has a tweak
		}
		if len(b.ins) > len(prevScripts) {
			return Block{}, fmt.Errorf("block %s transaction %d: %w", blk.Hash, i, ErrPrevScriptCount)
		}
		for j := range b.ins {
			b.ins[j].PrevScript = prevScripts[j]
		}
		prevScripts = prevScripts[len(b.ins):]
		b.addTx(&blk, uint32(i))
	}
	if err := r.End(); err != nil {
		return Block{}, fmt.Errorf("%w: block %s: %w", ErrMalformedBlock, blk.Hash, err)
	}
	if len(prevScripts) != 0 {
		return Block{}, fmt.Errorf("block %s: %d spent scripts left over: %w", blk.Hash, len(prevScripts), ErrPrevScriptCount)
	}
	b.batch.finish(&blk, &b.filter)
	blk.Filter = b.filter.AppendFilter(nil, blk.Hash)
	return blk, nil
}

// BuildMsgBlock is Build for a decoded block.
func (b *BlockBuilder) BuildMsgBlock(block *wire.MsgBlock, prevScripts [][]byte) (Block, error) {
	defer b.release()
	blk := Block{Hash: block.BlockHash()}
	b.filter.Reset()
	for i, tx := range block.Transactions {
		if i == 0 {
			continue
		}
		if len(tx.TxIn) > len(prevScripts) {
			return Block{}, fmt.Errorf("block %s transaction %d: %w", blk.Hash, i, ErrPrevScriptCount)
		}
		b.ins = b.ins[:0]
		for j, in := range tx.TxIn {
			b.ins = append(b.ins, Input{OutPoint: in.PreviousOutPoint, SigScript: in.SignatureScript, Witness: in.Witness, PrevScript: prevScripts[j]})
		}
		prevScripts = prevScripts[len(tx.TxIn):]
		b.outs = b.outs[:0]
		for _, out := range tx.TxOut {
			b.outs = append(b.outs, Output{Value: uint64(out.Value), Script: out.PkScript})
		}
		b.addTx(&blk, uint32(i))
	}
	if len(prevScripts) != 0 {
		return Block{}, fmt.Errorf("block %s: %d spent scripts left over: %w", blk.Hash, len(prevScripts), ErrPrevScriptCount)
	}
	b.batch.finish(&blk, &b.filter)
	blk.Filter = b.filter.AppendFilter(nil, blk.Hash)
	return blk, nil
}

// release drops every reference the scratch buffers hold into the block
// just read and its spent scripts, over their whole capacity: the slots
// past a small transaction's inputs, outputs and witness items still point
// into the earlier blocks whose larger transactions grew them, so an idle
// builder would otherwise keep several whole raw blocks (and rotated-out
// script cache slabs) live. The buffers themselves are kept.
func (b *BlockBuilder) release() {
	clear(b.ins[:cap(b.ins)])
	clear(b.outs[:cap(b.outs)])
	clear(b.items[:cap(b.items)])
	b.batch.reset()
	b.ins, b.outs, b.items, b.spans = b.ins[:0], b.outs[:0], b.items[:0], b.spans[:0]
}

// addTx reads the transaction in b.ins and b.outs and, when it may have a
// tweak, queues it in b.batch, which records its tweak and adds its
// taproot output keys to the filter once the batch is full or the block
// read (ComputeTweak's result, a run of transactions at a time).
func (b *BlockBuilder) addTx(blk *Block, index uint32) {
	var s txSum
	if !s.read(b.ins, b.outs) {
		return
	}
	b.batch.add(index, &s, b.outs)
	if len(b.batch.txs) >= tweakBatchSize {
		b.batch.finish(blk, &b.filter)
	}
}

// readTx reads one transaction in place into b.ins (without spent scripts)
// and b.outs, every slice pointing into r's bytes.
func (b *BlockBuilder) readTx(r *wirescan.Reader) error {
	b.ins, b.outs, b.items, b.spans = b.ins[:0], b.outs[:0], b.items[:0], b.spans[:0]
	if err := r.Skip(4); err != nil { // version
		return err
	}
	witness := false
	if rest := r.Rest(); len(rest) >= 2 && rest[0] == 0x00 && rest[1] == 0x01 {
		witness = true
		if err := r.Skip(2); err != nil {
			return err
		}
	}
	nin, err := r.Count(wirescan.MinTxInSize)
	if err != nil {
		return fmt.Errorf("input count: %w", err)
	}
	for range nin {
		op, err := r.Next(wirescan.OutPointSize)
		if err != nil {
			return err
		}
		in := Input{OutPoint: wire.OutPoint{Index: binary.LittleEndian.Uint32(op[32:])}}
		copy(in.OutPoint.Hash[:], op[:32])
		if in.SigScript, err = r.Bytes(); err != nil {
			return fmt.Errorf("signature script: %w", err)
		}
		if err := r.Skip(4); err != nil { // sequence
			return err
		}
		b.ins = append(b.ins, in)
	}
	nout, err := r.Count(wirescan.MinTxOutSize)
	if err != nil {
		return fmt.Errorf("output count: %w", err)
	}
	for range nout {
		v, err := r.Next(8)
		if err != nil {
			return err
		}
		script, err := r.Bytes()
		if err != nil {
			return fmt.Errorf("output script: %w", err)
		}
		b.outs = append(b.outs, Output{Value: binary.LittleEndian.Uint64(v), Script: script})
	}
	if witness {
		for range b.ins {
			items, err := r.Count(1)
			if err != nil {
				return fmt.Errorf("witness item count: %w", err)
			}
			for range items {
				item, err := r.Bytes()
				if err != nil {
					return fmt.Errorf("witness item: %w", err)
				}
				b.items = append(b.items, item)
			}
			b.spans = append(b.spans, len(b.items))
		}
		start := 0
		for i, end := range b.spans {
			b.ins[i].Witness = b.items[start:end:end]
			start = end
		}
	}
	return r.Skip(4) // lock time
}
