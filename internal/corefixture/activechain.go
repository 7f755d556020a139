package corefixture

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// activeChain is the chain the server presents as active: height → hash
// and hash → height, ending at tip.
type activeChain struct {
	tip      chainhash.Hash
	byHeight []chainhash.Hash
	height   map[chainhash.Hash]int64
}

// chainTo walks back from tip through the recorded and derived blocks.
func (fx *Fixtures) chainTo(tip chainhash.Hash) (*activeChain, error) {
	var rev []chainhash.Hash
	for h := tip; ; {
		b, ok := fx.byHash[h]
		if !ok {
			return nil, fmt.Errorf("block %s is not in the fixtures", h)
		}
		rev = append(rev, h)
		if b.Height == 0 {
			break
		}
		blk, err := b.MsgBlock()
		if err != nil {
			return nil, err
		}
		h = blk.Header.PrevBlock
	}
	ac := &activeChain{tip: tip, byHeight: make([]chainhash.Hash, len(rev)), height: make(map[chainhash.Hash]int64, len(rev))}
	for i, h := range rev {
		height := int64(len(rev) - 1 - i)
		ac.byHeight[height] = h
		ac.height[h] = height
	}
	return ac, nil
}

// SetActiveTip makes the node look as if tip were its best block:
// getbestblockhash, getblockhash, getblockchaininfo (blocks, headers,
// bestblockhash) and getblockheader (confirmations, nextblockhash) follow
// the chain ending at tip. Use the stale h114 to replay the state before
// the recorded reorg, h112 for the moment after invalidateblock, and
// fx.Tip for the final state. getblock verbosity 3 keeps its recorded
// confirmations. It returns an error if tip is not in the fixtures.
func (s *Server) SetActiveTip(tip chainhash.Hash) error {
	ac, err := s.fx.chainTo(tip)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.active = ac
	s.best = nil
	s.mu.Unlock()
	return nil
}

// headerJSON rewrites a getblockheader reply for the presented chain.
func (ac *activeChain) headerJSON(b *Block) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b.HeaderJSON, &m); err != nil {
		return b.HeaderJSON
	}
	tipHeight := int64(len(ac.byHeight) - 1)
	delete(m, "nextblockhash")
	if h, ok := ac.height[b.Hash]; ok {
		m["confirmations"] = json.RawMessage(strconv.FormatInt(tipHeight-h+1, 10))
		if h < tipHeight {
			m["nextblockhash"] = quote(ac.byHeight[h+1].String())
		}
	} else {
		m["confirmations"] = json.RawMessage("-1")
	}
	out, err := json.Marshal(m)
	if err != nil {
		return b.HeaderJSON
	}
	return out
}

// chainInfoJSON rewrites getblockchaininfo for the presented chain.
func (ac *activeChain) chainInfoJSON(recorded []byte) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(recorded, &m); err != nil {
		return recorded
	}
	tipHeight := strconv.Itoa(len(ac.byHeight) - 1)
	m["blocks"] = json.RawMessage(tipHeight)
	m["headers"] = json.RawMessage(tipHeight)
	m["bestblockhash"] = quote(ac.tip.String())
	out, err := json.Marshal(m)
	if err != nil {
		return recorded
	}
	return out
}
