package corefixture

import (
	"bytes"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// deriveTxs builds the getrawtransaction answers (see the package doc).
func (fx *Fixtures) deriveTxs() error {
	spent := make(map[chainhash.Hash]bool)
	var template *wire.MsgTx
	var templateHeight int32
	for _, b := range fx.Blocks {
		blk, err := b.MsgBlock()
		if err != nil {
			return err
		}
		for i, tx := range blk.Transactions {
			var buf bytes.Buffer
			if err := tx.Serialize(&buf); err != nil {
				return err
			}
			fx.txs[tx.TxHash()] = buf.Bytes()
			if i == 0 && template == nil && len(blk.Transactions) == 1 {
				template, templateHeight = tx, b.Height
			}
			if i == 0 {
				continue
			}
			for _, in := range tx.TxIn {
				spent[in.PreviousOutPoint.Hash] = true
			}
		}
		if b.RESTSpent == nil && len(blk.Transactions) == 1 {
			fx.spentBin[b.Hash] = []byte{0x01, 0x00}
		}
	}
	if template == nil {
		return fmt.Errorf("no coinbase-only block to use as a coinbase template")
	}
	for h := int32(1); h < templateHeight; h++ {
		cb := rebuildCoinbase(template, h)
		id := cb.TxHash()
		if !spent[id] {
			continue // not verifiable against a recorded spend: not served
		}
		var buf bytes.Buffer
		if err := cb.Serialize(&buf); err != nil {
			return err
		}
		fx.txs[id] = buf.Bytes()
	}
	for id := range spent {
		if _, ok := fx.txs[id]; !ok {
			return fmt.Errorf("recorded blocks spend tx %s, which could not be derived", id)
		}
	}
	tb, _ := fx.byHash[fx.active[int64(templateHeight)]].MsgBlock()
	if tb == nil {
		return fmt.Errorf("template block %d not recorded", templateHeight)
	}
	return fx.deriveEarly(template, templateHeight, tb.Header.Timestamp.Unix())
}

// rebuildCoinbase returns template's coinbase as Core's regtest miner would
// have built it at height h for a coinbase-only block paying the same
// script: scriptSig = BIP34 height push + OP_0, nLockTime = h−1.
func rebuildCoinbase(template *wire.MsgTx, h int32) *wire.MsgTx {
	cb := template.Copy()
	var sig []byte
	switch {
	case h >= 1 && h <= 16:
		sig = []byte{0x50 + byte(h), 0x00}
	case h < 0x80:
		sig = []byte{0x01, byte(h), 0x00}
	default:
		sig = []byte{0x02, byte(h), byte(h >> 8), 0x00}
	}
	cb.TxIn[0].SignatureScript = sig
	cb.LockTime = uint32(h - 1)
	return cb
}
