package msgread

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testtx"
	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// scanTx agrees with wire on every transaction of the BIP-158 test vector
// blocks (testnet, with and without witnesses): same acceptance, txid and
// wtxid.
func TestScanTxOnRealBlocks(t *testing.T) {
	var txs, segwit int
	for _, v := range testvectors.LoadBIP158(t) {
		for _, tx := range v.Block.Transactions {
			payload := payloadOf(tx)
			txid, wtxid, err := scanTx(payload)
			if err != nil {
				t.Fatalf("block %d tx %s: %v", v.Height, tx.TxHash(), err)
			}
			if txid != tx.TxHash() || wtxid != tx.WitnessHash() {
				t.Fatalf("block %d tx %s: ids %s/%s", v.Height, tx.TxHash(), txid, wtxid)
			}
			txs++
			if tx.HasWitness() {
				segwit++
			}
		}
	}
	if txs < 10 || segwit == 0 {
		t.Fatalf("only %d transactions (%d segwit) in the vectors", txs, segwit)
	}
}

func TestScanTxRejectsMalformed(t *testing.T) {
	good := payloadOf(testtx.Witness(1))
	legacy := payloadOf(testtx.Legacy(1))
	noWitness := payloadOf(testtx.Legacy(1))
	// legacy with a marker and flag but an empty witness: superfluous.
	superfluous := append(append(append([]byte{}, noWitness[:4]...), 0, 1), noWitness[4:len(noWitness)-4]...)
	superfluous = append(superfluous, 0) // one input, zero witness items
	superfluous = append(superfluous, noWitness[len(noWitness)-4:]...)
	for _, c := range []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)-1]},
		{"trailing byte", append(bytes.Clone(legacy), 0)},
		{"bad flag", append(append(bytes.Clone(good[:4]), 0, 2), good[6:]...)},
		{"superfluous witness flag", superfluous},
		{"non-canonical input count", append(append(bytes.Clone(legacy[:4]), 0xfd, 1, 0), legacy[5:]...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := scanTx(c.payload)
			if !errors.Is(err, ErrMisbehaving) {
				t.Fatalf("scanTx: %v", err)
			}
			var tx wire.MsgTx
			r := bytes.NewReader(c.payload)
			if tx.BtcDecode(r, wire.ProtocolVersion, wire.WitnessEncoding) == nil && r.Len() == 0 {
				t.Fatal("wire accepts what scanTx rejects")
			}
		})
	}
}
