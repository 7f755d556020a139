package corefixture

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// timeWindow and maxNonce bound the search for the header fields of the
// coinbase-only blocks h1–h94: regtest mined them within seconds of h95,
// and regtest's target accepts about every second nonce.
const (
	timeWindow = 300
	maxNonce   = 256
)

// deriveEarly rebuilds genesis (from chaincfg) and the coinbase-only blocks
// h1–h94, of which the recording has only the hash. Each block is the
// rebuilt coinbase (see rebuildCoinbase) under a header whose time and
// nonce are found by search; a block is accepted only if its header hashes
// to the recorded hash at that height, so every derived block is verified.
func (fx *Fixtures) deriveEarly(template *wire.MsgTx, templateHeight int32, t95 int64) error {
	genesis := chaincfg.RegressionNetParams.GenesisBlock
	if genesis.BlockHash() != fx.active[0] {
		return fmt.Errorf("recorded genesis %s is not regtest's %s", fx.active[0], genesis.BlockHash())
	}
	blocks := []*wire.MsgBlock{genesis}
	prevTime := t95 - timeWindow
	for h := int32(1); h < templateHeight; h++ {
		want, ok := fx.active[int64(h)]
		if !ok {
			return fmt.Errorf("no recorded hash at height %d", h)
		}
		cb := rebuildCoinbase(template, h)
		blk := &wire.MsgBlock{
			Header: wire.BlockHeader{
				Version:    0x20000000,
				PrevBlock:  blocks[h-1].BlockHash(),
				MerkleRoot: cb.TxHash(),
				Bits:       0x207fffff,
			},
			Transactions: []*wire.MsgTx{cb},
		}
		if !searchHeader(&blk.Header, prevTime, t95, want) {
			return fmt.Errorf("could not rebuild block %d (%s)", h, want)
		}
		prevTime = blk.Header.Timestamp.Unix()
		blocks = append(blocks, blk)
	}
	tip := int64(fx.Blocks[len(fx.Blocks)-1].Height)
	for h, blk := range blocks {
		var raw bytes.Buffer
		if err := blk.Serialize(&raw); err != nil {
			return err
		}
		b := &Block{Height: int32(h), Label: "derived-coinbase-only", Hash: blk.BlockHash(), Derived: true, Raw: raw.Bytes()}
		if h == 0 {
			b.Label = "derived-genesis"
		}
		next := fx.active[int64(h)+1]
		b.HeaderJSON = verboseJSON(blk, int64(h), tip-int64(h)+1, next, false)
		b.Verbose3 = verboseJSON(blk, int64(h), tip-int64(h)+1, next, true)
		b.FilterJSON = fx.filters[b.Hash]
		if h > 0 {
			// Core refuses getrawtransaction of the genesis coinbase;
			// the others are ordinary, now verified, transactions.
			fx.spentBin[b.Hash] = []byte{0x01, 0x00}
			var tx bytes.Buffer
			if err := blk.Transactions[0].Serialize(&tx); err != nil {
				return err
			}
			fx.txs[blk.Transactions[0].TxHash()] = tx.Bytes()
		}
		fx.Early = append(fx.Early, b)
		fx.byHash[b.Hash] = b
	}
	return nil
}

// searchHeader tries small nonces over the whole time window first (the
// regtest miner starts at nonce 0 and about every second nonce meets the
// target), then larger ones.
func searchHeader(hdr *wire.BlockHeader, from, to int64, want chainhash.Hash) bool {
	lo := uint32(0)
	for _, hi := range []uint32{8, maxNonce} {
		for t := from - 2; t <= to; t++ {
			hdr.Timestamp = time.Unix(t, 0)
			for n := lo; n < hi; n++ {
				hdr.Nonce = n
				if hdr.BlockHash() == want {
					return true
				}
			}
		}
		lo = hi
	}
	return false
}

// verboseJSON renders a reduced getblockheader (withTxs=false) or getblock
// verbosity 3 reply for a derived block: the header members, and per
// transaction txid, hash, version, locktime, hex, vin (coinbase, witness,
// sequence) and vout (value, n, scriptPubKey.hex). Members Core computes
// from its block index (chainwork, mediantime, difficulty, asm,
// descriptors, addresses) are left out.
func verboseJSON(blk *wire.MsgBlock, height, confirmations int64, next chainhash.Hash, withTxs bool) []byte {
	type spk struct {
		Hex string `json:"hex"`
	}
	type vout struct {
		Value        json.Number `json:"value"`
		N            int         `json:"n"`
		ScriptPubKey spk         `json:"scriptPubKey"`
	}
	type vin struct {
		Coinbase    string   `json:"coinbase"`
		TxInWitness []string `json:"txinwitness,omitempty"`
		Sequence    uint32   `json:"sequence"`
	}
	type tx struct {
		TxID     string `json:"txid"`
		Hash     string `json:"hash"`
		Version  int32  `json:"version"`
		LockTime uint32 `json:"locktime"`
		Vin      []vin  `json:"vin"`
		Vout     []vout `json:"vout"`
		Hex      string `json:"hex"`
	}
	type block struct {
		Hash          string `json:"hash"`
		Confirmations int64  `json:"confirmations"`
		Height        int64  `json:"height"`
		Version       int32  `json:"version"`
		VersionHex    string `json:"versionHex"`
		MerkleRoot    string `json:"merkleroot"`
		Time          int64  `json:"time"`
		Nonce         uint32 `json:"nonce"`
		Bits          string `json:"bits"`
		NTx           int    `json:"nTx"`
		Prev          string `json:"previousblockhash,omitempty"`
		Next          string `json:"nextblockhash,omitempty"`
		Tx            []tx   `json:"tx,omitempty"`
	}
	h := blk.Header
	out := block{
		Hash: blk.BlockHash().String(), Confirmations: confirmations, Height: height,
		Version: h.Version, VersionHex: fmt.Sprintf("%08x", uint32(h.Version)),
		MerkleRoot: h.MerkleRoot.String(), Time: h.Timestamp.Unix(), Nonce: h.Nonce,
		Bits: fmt.Sprintf("%08x", h.Bits), NTx: len(blk.Transactions),
	}
	if h.PrevBlock != (chainhash.Hash{}) {
		out.Prev = h.PrevBlock.String()
	}
	if next != (chainhash.Hash{}) {
		out.Next = next.String()
	}
	if withTxs {
		for _, t := range blk.Transactions {
			var raw bytes.Buffer
			_ = t.Serialize(&raw)
			jt := tx{TxID: t.TxHash().String(), Hash: t.WitnessHash().String(), Version: t.Version, LockTime: t.LockTime, Hex: hex.EncodeToString(raw.Bytes())}
			for _, in := range t.TxIn {
				v := vin{Coinbase: hex.EncodeToString(in.SignatureScript), Sequence: in.Sequence}
				for _, w := range in.Witness {
					v.TxInWitness = append(v.TxInWitness, hex.EncodeToString(w))
				}
				jt.Vin = append(jt.Vin, v)
			}
			for i, o := range t.TxOut {
				jt.Vout = append(jt.Vout, vout{Value: json.Number(fmt.Sprintf("%d.%08d", o.Value/1e8, o.Value%1e8)), N: i, ScriptPubKey: spk{Hex: hex.EncodeToString(o.PkScript)}})
			}
			out.Tx = append(out.Tx, jt)
		}
	}
	b, _ := json.Marshal(out)
	return b
}
