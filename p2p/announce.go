package p2p

import (
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/knownhashes"
)

// maxHeadersAnnounce is Core's MAX_BLOCKS_TO_ANNOUNCE: a headers
// announcement carries at most this many new blocks; more (or a chain that
// does not connect to one the peer knows) falls back to an inv of the tip.
const maxHeadersAnnounce = 8

// announcement returns the message announcing tip to a peer, or nil when
// the peer already knows it. With preferHeaders (sendheaders) it sends the
// headers from the newest block the peer knows up to tip when that block is
// at most maxHeadersAnnounce behind; otherwise an inv of tip. The announced
// hashes are added to known.
func announcement(view ChainView, tip Tip, known *knownhashes.Rolling, preferHeaders bool) (wire.Message, error) {
	if known.Has(tip.Hash[:]) {
		return nil, nil
	}
	if preferHeaders {
		hdrs, err := unknownHeaders(view, tip, known)
		if err != nil {
			return nil, err
		}
		if hdrs != nil {
			msg := wire.NewMsgHeaders()
			for i := len(hdrs) - 1; i >= 0; i-- {
				h := hdrs[i].hash
				known.Add(h[:])
				_ = msg.AddBlockHeader(&hdrs[i].header)
			}
			return msg, nil
		}
	}
	known.Add(tip.Hash[:])
	msg := wire.NewMsgInv()
	_ = msg.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &tip.Hash))
	return msg, nil
}

type hashedHeader struct {
	hash   chainhash.Hash
	header wire.BlockHeader
}

// unknownHeaders walks back from tip to the newest block known to the peer
// and returns the headers after it, newest first; nil when there are more
// than maxHeadersAnnounce or the walk finds no known block.
func unknownHeaders(view ChainView, tip Tip, known *knownhashes.Rolling) ([]hashedHeader, error) {
	var out []hashedHeader
	hash := tip.Hash
	for len(out) < maxHeadersAnnounce {
		hdr, _, err := view.HeaderByHash(hash)
		if err != nil {
			return nil, fmt.Errorf("announce %s: %w", hash, err)
		}
		out = append(out, hashedHeader{hash: hash, header: hdr})
		if known.Has(hdr.PrevBlock[:]) {
			return out, nil
		}
		hash = hdr.PrevBlock
	}
	return nil, nil
}
