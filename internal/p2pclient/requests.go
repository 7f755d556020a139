package p2pclient

import (
	"bytes"
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
)

// GetHeaders asks for the headers following the first locator hash the
// peer knows, up to stop (zero: up to 2,000).
func (p *Peer) GetHeaders(ctx context.Context, locator []chainhash.Hash, stop chainhash.Hash) ([]wire.BlockHeader, error) {
	msg := wire.NewMsgGetHeaders()
	msg.ProtocolVersion = p.c.pver
	msg.HashStop = stop
	for i := range locator {
		if err := msg.AddBlockLocatorHash(&locator[i]); err != nil {
			return nil, fmt.Errorf("p2pclient: getheaders: %w", err)
		}
	}
	if err := p.Send(ctx, msg); err != nil {
		return nil, err
	}
	f, err := p.readCommand(ctx, wire.CmdHeaders)
	if err != nil {
		return nil, err
	}
	if err := checkList(f.Payload, 0, wire.MaxBlockHeaderPayload+1); err != nil {
		return nil, fmt.Errorf("headers: %w", err)
	}
	var hm wire.MsgHeaders
	if err := hm.BtcDecode(bytes.NewReader(f.Payload), p.c.pver, wire.BaseEncoding); err != nil {
		return nil, fmt.Errorf("%w: headers: %v", ErrProtocol, err)
	}
	out := make([]wire.BlockHeader, len(hm.Headers))
	for i, h := range hm.Headers {
		out[i] = *h
	}
	return out, nil
}

// GetCFCheckpt returns the peer's basic-filter headers at every 1,000th
// height up to the block stop.
func (p *Peer) GetCFCheckpt(ctx context.Context, stop chainhash.Hash) ([]chainhash.Hash, error) {
	return p.GetCFCheckptOf(ctx, wire.GCSFilterRegular, stop)
}

// GetCFCheckptOf is GetCFCheckpt for filter type ft.
func (p *Peer) GetCFCheckptOf(ctx context.Context, ft wire.FilterType, stop chainhash.Hash) ([]chainhash.Hash, error) {
	if err := p.Send(ctx, wire.NewMsgGetCFCheckpt(ft, &stop)); err != nil {
		return nil, err
	}
	for {
		f, err := p.readCommand(ctx, wire.CmdCFCheckpt)
		if err != nil {
			return nil, err
		}
		if err := checkList(f.Payload, 1+chainhash.HashSize, chainhash.HashSize); err != nil {
			return nil, fmt.Errorf("cfcheckpt: %w", err)
		}
		var m wire.MsgCFCheckpt
		if err := m.BtcDecode(bytes.NewReader(f.Payload), p.c.pver, wire.BaseEncoding); err != nil {
			return nil, fmt.Errorf("%w: cfcheckpt: %v", ErrProtocol, err)
		}
		if m.StopHash != stop || m.FilterType != ft {
			continue // an answer to another request
		}
		out := make([]chainhash.Hash, len(m.FilterHeaders))
		for i, h := range m.FilterHeaders {
			out[i] = *h
		}
		return out, nil
	}
}

// GetCFHeaders returns the basic-filter header before start and the filter
// hashes of the blocks from start to stop (at most 2,000).
func (p *Peer) GetCFHeaders(ctx context.Context, start uint32, stop chainhash.Hash) (chainhash.Hash, []chainhash.Hash, error) {
	return p.GetCFHeadersOf(ctx, wire.GCSFilterRegular, start, stop)
}

// GetCFHeadersOf is GetCFHeaders for filter type ft.
func (p *Peer) GetCFHeadersOf(ctx context.Context, ft wire.FilterType, start uint32, stop chainhash.Hash) (chainhash.Hash, []chainhash.Hash, error) {
	if err := p.Send(ctx, wire.NewMsgGetCFHeaders(ft, start, &stop)); err != nil {
		return chainhash.Hash{}, nil, err
	}
	for {
		f, err := p.readCommand(ctx, wire.CmdCFHeaders)
		if err != nil {
			return chainhash.Hash{}, nil, err
		}
		if err := checkList(f.Payload, 1+2*chainhash.HashSize, chainhash.HashSize); err != nil {
			return chainhash.Hash{}, nil, fmt.Errorf("cfheaders: %w", err)
		}
		var m wire.MsgCFHeaders
		if err := m.BtcDecode(bytes.NewReader(f.Payload), p.c.pver, wire.BaseEncoding); err != nil {
			return chainhash.Hash{}, nil, fmt.Errorf("%w: cfheaders: %v", ErrProtocol, err)
		}
		if m.StopHash != stop || m.FilterType != ft {
			continue
		}
		out := make([]chainhash.Hash, len(m.FilterHashes))
		for i, h := range m.FilterHashes {
			out[i] = *h
		}
		return m.PrevFilterHeader, out, nil
	}
}

// GetCFilters returns the basic filters (wire form, with N) of the blocks
// blocks, which must be the chain from height start up to stop (at most
// 1,000): the peer must answer one cfilter per block, in order.
func (p *Peer) GetCFilters(ctx context.Context, start uint32, stop chainhash.Hash, blocks []chainhash.Hash) ([][]byte, error) {
	return p.GetCFiltersOf(ctx, wire.GCSFilterRegular, start, stop, blocks)
}

// GetCFiltersOf is GetCFilters for filter type ft, whose cfilters carry
// at most wire.MaxCFilterDataSize bytes each.
func (p *Peer) GetCFiltersOf(ctx context.Context, ft wire.FilterType, start uint32, stop chainhash.Hash, blocks []chainhash.Hash) ([][]byte, error) {
	if err := p.Send(ctx, wire.NewMsgGetCFilters(ft, start, &stop)); err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(blocks))
	for len(out) < len(blocks) {
		f, err := p.readCommand(ctx, wire.CmdCFilter)
		if err != nil {
			return nil, err
		}
		var m wire.MsgCFilter
		if err := m.BtcDecode(bytes.NewReader(f.Payload), p.c.pver, wire.BaseEncoding); err != nil {
			return nil, fmt.Errorf("%w: cfilter: %v", ErrProtocol, err)
		}
		if want := blocks[len(out)]; m.BlockHash != want || m.FilterType != ft {
			return nil, fmt.Errorf("%w: cfilter for %s, want %s", ErrProtocol, m.BlockHash, want)
		}
		out = append(out, m.Data)
	}
	return out, nil
}

// Block is a block and its size on the wire.
type Block struct {
	Block *wire.MsgBlock
	Size  int
}

// GetBlocks fetches blocks (MSG_WITNESS_BLOCK with witness, else
// MSG_BLOCK), checking that each arrives in order and hashes to what was
// asked. The merkle root is not checked here.
func (p *Peer) GetBlocks(ctx context.Context, hashes []chainhash.Hash, witness bool) ([]Block, error) {
	typ := wire.InvTypeBlock
	if witness {
		typ = wire.InvTypeWitnessBlock
	}
	if err := p.getData(ctx, typ, hashes); err != nil {
		return nil, err
	}
	out := make([]Block, 0, len(hashes))
	for len(out) < len(hashes) {
		f, err := p.readCommand(ctx, wire.CmdBlock)
		if err != nil {
			return nil, err
		}
		if err := checkBlock(f.Payload); err != nil {
			return nil, fmt.Errorf("block: %w", err)
		}
		var b wire.MsgBlock
		r := bytes.NewReader(f.Payload)
		if err := b.BtcDecode(r, p.c.pver, wire.WitnessEncoding); err != nil || r.Len() != 0 {
			return nil, fmt.Errorf("%w: block: %v (%d bytes left)", ErrProtocol, err, r.Len())
		}
		if got, want := b.BlockHash(), hashes[len(out)]; got != want {
			return nil, fmt.Errorf("%w: block %s, want %s", ErrProtocol, got, want)
		}
		out = append(out, Block{Block: &b, Size: f.Size()})
	}
	return out, nil
}

func (p *Peer) getData(ctx context.Context, typ wire.InvType, hashes []chainhash.Hash) error {
	return p.withCtx(ctx, p.c.SetWriteDeadline, func() error { return p.c.GetData(typ, hashes) })
}

// LoadFilter sends filterload.
func (p *Peer) LoadFilter(ctx context.Context, f *bloom.Filter) error {
	return p.Send(ctx, f.MsgFilterLoad())
}

// FilteredBlock is a peer's answer to one MSG_FILTERED_BLOCK request: the
// merkleblock and the transactions that followed it, as received.
type FilteredBlock struct {
	MerkleBlock *bloom.MerkleBlock
	// RawMerkleBlock and RawTxs are the payloads as received.
	RawMerkleBlock []byte
	Txs            []*wire.MsgTx
	RawTxs         [][]byte
}

// Size is the bytes the filtered block took on the wire.
func (fb *FilteredBlock) Size() int {
	n := headerSize + len(fb.RawMerkleBlock)
	for _, t := range fb.RawTxs {
		n += headerSize + len(t)
	}
	return n
}

// Verify checks fb against the block the caller asked for: the header
// hashes to want, the partial merkle tree is valid with the header's root
// (bloom.MerkleBlock.Verify), and the transactions that followed are
// exactly the matched ones, in block order, each hashing to its txid and
// none 64 bytes long without witness (CVE-2017-12842). It returns the
// matches.
func (fb *FilteredBlock) Verify(want chainhash.Hash) ([]bloom.Match, error) {
	if got := fb.MerkleBlock.Header.BlockHash(); got != want {
		return nil, fmt.Errorf("%w: merkleblock for %s, want %s", ErrProtocol, got, want)
	}
	matches, err := fb.MerkleBlock.Verify()
	if err != nil {
		return nil, fmt.Errorf("merkleblock %s: %w", want, err)
	}
	if len(fb.Txs) != len(matches) {
		return nil, fmt.Errorf("%w: merkleblock %s proves %d transactions, %d followed", ErrProtocol, want, len(matches), len(fb.Txs))
	}
	for i, tx := range fb.Txs {
		if id := tx.TxHash(); id != matches[i].Txid {
			return nil, fmt.Errorf("%w: merkleblock %s: transaction %d is %s, want %s", ErrProtocol, want, i, id, matches[i].Txid)
		}
		if tx.SerializeSizeStripped() == 64 {
			return nil, fmt.Errorf("%w: merkleblock %s: 64-byte transaction %s", ErrProtocol, want, matches[i].Txid)
		}
	}
	return matches, nil
}

// GetFilteredBlocks asks for blocks filtered by the loaded filter
// (MSG_FILTERED_WITNESS_BLOCK with witness, else MSG_FILTERED_BLOCK) and
// collects the answers up to a ping: one merkleblock per block, in order,
// each followed by its matched transactions. A peer without a loaded
// filter answers nothing, which is an error here. The answers are not
// verified: call FilteredBlock.Verify.
func (p *Peer) GetFilteredBlocks(ctx context.Context, hashes []chainhash.Hash, witness bool) ([]*FilteredBlock, error) {
	typ := wire.InvTypeFilteredBlock
	if witness {
		typ = wire.InvTypeFilteredWitnessBlock
	}
	if err := p.getData(ctx, typ, hashes); err != nil {
		return nil, err
	}
	frames, err := p.Sync(ctx)
	if err != nil {
		return nil, err
	}
	var out []*FilteredBlock
	for _, f := range frames {
		switch f.Command {
		case wire.CmdMerkleBlock:
			mb, err := bloom.DecodeMerkleBlock(f.Payload)
			if err != nil {
				return nil, err
			}
			if len(out) == len(hashes) {
				return nil, fmt.Errorf("%w: more merkleblocks than blocks asked for", ErrProtocol)
			}
			out = append(out, &FilteredBlock{MerkleBlock: mb, RawMerkleBlock: f.Payload})
		case wire.CmdTx:
			if len(out) == 0 {
				continue // a relayed transaction, not part of the answer
			}
			if err := checkTx(f.Payload); err != nil {
				return nil, fmt.Errorf("tx: %w", err)
			}
			var tx wire.MsgTx
			r := bytes.NewReader(f.Payload)
			if err := tx.BtcDecode(r, p.c.pver, wire.WitnessEncoding); err != nil || r.Len() != 0 {
				return nil, fmt.Errorf("%w: tx: %v (%d bytes left)", ErrProtocol, err, r.Len())
			}
			cur := out[len(out)-1]
			cur.Txs = append(cur.Txs, &tx)
			cur.RawTxs = append(cur.RawTxs, f.Payload)
		case wire.CmdNotFound:
			return nil, fmt.Errorf("%w (filtered blocks)", ErrNotFound)
		}
	}
	if len(out) != len(hashes) {
		return nil, fmt.Errorf("%w: %d merkleblocks for %d blocks (is a filter loaded?)", ErrProtocol, len(out), len(hashes))
	}
	for i, fb := range out {
		if got := fb.MerkleBlock.Header.BlockHash(); got != hashes[i] {
			return nil, fmt.Errorf("%w: merkleblock %d is for %s, want %s", ErrProtocol, i, got, hashes[i])
		}
	}
	return out, nil
}
