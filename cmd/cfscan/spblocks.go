package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/silentpay"
)

// spBlockSource fetches the blocks whose taproot filter matched. What it
// learns is which blocks the wallet downloads.
type spBlockSource interface {
	// Blocks returns the blocks with these hashes, in order.
	Blocks(ctx context.Context, hashes []chainhash.Hash) ([]*wire.MsgBlock, error)
	// BytesRead counts the bytes received from the source.
	BytesRead() int64
	String() string
}

// p2pBlocks fetches blocks with getdata (witness blocks) from a peer.
type p2pBlocks struct {
	peer *p2pclient.Peer
	addr string
}

func (p *p2pBlocks) Blocks(ctx context.Context, hashes []chainhash.Hash) ([]*wire.MsgBlock, error) {
	got, err := p.peer.GetBlocks(ctx, hashes, true)
	if err != nil {
		return nil, fmt.Errorf("%s: getdata blocks: %w", p.addr, err)
	}
	out := make([]*wire.MsgBlock, len(got))
	for i := range got {
		out[i] = got[i].Block
	}
	return out, nil
}

func (p *p2pBlocks) BytesRead() int64 { return p.peer.BytesRead() }
func (p *p2pBlocks) String() string   { return p.addr + " (P2P)" }

// restBlocks fetches blocks from Bitcoin Core's REST interface,
// /rest/block/<hash>.bin.
type restBlocks struct{ srv *spServer }

func (r *restBlocks) Blocks(ctx context.Context, hashes []chainhash.Hash) ([]*wire.MsgBlock, error) {
	out := make([]*wire.MsgBlock, len(hashes))
	for i, h := range hashes {
		body, err := r.srv.get(ctx, "/rest/block/"+h.String()+".bin", wire.MaxBlockPayload)
		if err != nil {
			return nil, err
		}
		var b wire.MsgBlock
		if err := b.Deserialize(bytes.NewReader(body)); err != nil {
			return nil, fmt.Errorf("%w: %s: block %s: %v", errSPFormat, r.srv, h, err)
		}
		out[i] = &b
	}
	return out, nil
}

func (r *restBlocks) BytesRead() int64 { return r.srv.read.Load() }
func (r *restBlocks) String() string   { return r.srv.String() + " (REST)" }

// checkSPBlock ties a fetched block to what the servers committed to: its
// hash is the committed block hash, its transactions hash to its merkle
// root with no txid repeated (CVE-2012-2459), every tweak names a
// transaction with a taproot output, and every taproot output of those
// transactions is in the committed taproot filter.
func checkSPBlock(b *wire.MsgBlock, hash chainhash.Hash, tweaks []silentpay.TxTweak, filter []byte) error {
	if got := b.BlockHash(); got != hash {
		return fmt.Errorf("%w: got block %s", p2pclient.ErrProtocol, got)
	}
	if len(b.Transactions) == 0 {
		return fmt.Errorf("%w: no transactions", p2pclient.ErrProtocol)
	}
	txids := bloom.BlockTxids(b)
	seen := make(map[chainhash.Hash]struct{}, len(txids))
	for _, id := range txids {
		if _, dup := seen[id]; dup {
			return fmt.Errorf("%w: transaction %s appears twice", p2pclient.ErrProtocol, id)
		}
		seen[id] = struct{}{}
	}
	if root := bloom.NewPartialMerkleTree(txids, make([]bool, len(txids))).Hashes[0]; root != b.Header.MerkleRoot {
		return fmt.Errorf("%w: merkle root %s, header %s", p2pclient.ErrProtocol, root, b.Header.MerkleRoot)
	}
	f, err := gcs.NewFilterWithN(gcs.BasicParams, filter)
	if err != nil {
		return fmt.Errorf("%w: taproot filter: %v", errSPFormat, err)
	}
	sip := gcs.NewSipHasher(gcs.BlockKey(hash))
	for _, tw := range tweaks {
		if int(tw.TxIndex) >= len(b.Transactions) {
			return fmt.Errorf("%w: a tweak names transaction %d of %d", errSPIndexWrong, tw.TxIndex, len(b.Transactions))
		}
		keys := taprootKeys(b.Transactions[tw.TxIndex])
		if len(keys) == 0 {
			return fmt.Errorf("%w: a tweak names transaction %d, which has no taproot output", errSPIndexWrong, tw.TxIndex)
		}
		for _, k := range keys {
			ok, err := f.Match(sip, k.key[:])
			if err != nil {
				return fmt.Errorf("%w: taproot filter: %v", errSPFormat, err)
			}
			if !ok {
				return fmt.Errorf("%w: the taproot filter lacks an output of transaction %d", errSPIndexWrong, tw.TxIndex)
			}
		}
	}
	return nil
}

// taprootOutput is one taproot output of a transaction: its position and
// x-only key.
type taprootOutput struct {
	vout uint32
	key  [32]byte
}

// taprootKeys lists tx's taproot outputs.
func taprootKeys(tx *wire.MsgTx) []taprootOutput {
	var out []taprootOutput
	for i, o := range tx.TxOut {
		if silentpay.IsTaproot(o.PkScript) {
			out = append(out, taprootOutput{vout: uint32(i), key: [32]byte(o.PkScript[2:])})
		}
	}
	return out
}
