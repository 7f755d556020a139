package bloom

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// MatchTxAndUpdate reports whether tx is relevant to the filter, updating
// the filter as nFlags asks; it is Core's CBloomFilter::IsRelevantAndUpdate.
// txid must be tx's txid (tx.TxHash(); passed in because a caller serving
// many peers computes it once per block, not once per peer). It allocates
// nothing.
//
// In order:
//  1. a zero-byte filter matches every transaction and is not changed;
//  2. the txid (internal byte order) is tested;
//  3. for every output, its script's non-empty data pushes are tested in
//     order up to the first that matches (or the first that does not
//     parse); on a match, BLOOM_UPDATE_ALL inserts the outpoint (txid,
//     index), and BLOOM_UPDATE_P2PUBKEY_ONLY inserts it only when the
//     script is pay-to-pubkey or bare multisig (Core's Solver). Every
//     output is visited even after a match, so one transaction can add
//     several outpoints;
//  4. if nothing matched yet, for every input: the spent outpoint, then
//     the non-empty data pushes of its scriptSig; the first hit returns.
//
// Witnesses are never looked at. nFlags bits above the lowest two are
// ignored (Core masks them off).
func (f *Filter) MatchTxAndUpdate(tx *wire.MsgTx, txid *chainhash.Hash) bool {
	if len(f.data) == 0 {
		return true
	}
	found := f.Contains(txid[:])
	mode := f.UpdateMode()
	for i, out := range tx.TxOut {
		if !f.containsAnyPush(out.PkScript) {
			continue
		}
		found = true
		switch {
		case mode == wire.BloomUpdateAll,
			mode == wire.BloomUpdateP2PubkeyOnly && isPubKeyOrMultisig(out.PkScript):
			var buf [outPointSize]byte
			f.Insert(serializeOutPoint(&buf, *txid, uint32(i)))
		}
	}
	if found {
		return true
	}
	var buf [outPointSize]byte
	for _, in := range tx.TxIn {
		if f.Contains(serializeOutPoint(&buf, in.PreviousOutPoint.Hash, in.PreviousOutPoint.Index)) {
			return true
		}
		if f.containsAnyPush(in.SignatureScript) {
			return true
		}
	}
	return false
}
