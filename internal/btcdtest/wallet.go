package btcdtest

import (
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Wallet is a deterministic key-based test wallet. Its keys derive from a
// seed; key 0's P2PKH address is the mining address. It tracks the outputs
// it owns by scanning blocks (Sync) and builds and signs transactions for
// every kind of script it hands out (NewScript). It keeps only confirmed
// outputs; inputs of transactions it built stay reserved until a scanned
// block spends them. Safe for concurrent use.
type Wallet struct {
	params *chaincfg.Params
	seed   int64

	mu      sync.Mutex
	keys    []*keyPair              // by index; key 0 mines
	owned   map[string]ownedScript  // output script -> how to spend it
	utxos   map[wire.OutPoint]*UTXO // confirmed, unspent
	pending map[wire.OutPoint]bool  // spent by a tx not yet seen in a block
	queues  walletQueues
	nextKey [numKinds]uint32 // first key index not yet used per kind
	synced  []chainhash.Hash // active-chain hashes scanned, by height
	mining  []byte           // the mining script
}

// NewWallet returns the wallet of seed on params with only the mining key
// derived. Two wallets with the same seed derive the same keys in the same
// order, but a wallet recognises only the mining script and the scripts it
// handed out itself: a second wallet with the same seed sees the coinbases,
// not the first one's other outputs.
func NewWallet(params *chaincfg.Params, seed int64) *Wallet {
	w := &Wallet{
		params:  params,
		seed:    seed,
		owned:   make(map[string]ownedScript),
		utxos:   make(map[wire.OutPoint]*UTXO),
		pending: make(map[wire.OutPoint]bool),
	}
	k := w.newKeyLocked()
	script, err := w.registerLocked(KindP2PKH, k)
	if err != nil {
		panic(fmt.Sprintf("btcdtest: mining script: %v", err)) // unreachable: fixed-size inputs
	}
	w.mining = script
	return w
}

// MiningAddress is the encoded P2PKH address of key 0, passed to btcd as
// --miningaddr.
func (w *Wallet) MiningAddress() string {
	addr, err := address.NewAddressPubKeyHash(w.keys[miningKeyIndex].hash160, w.params)
	if err != nil {
		panic(fmt.Sprintf("btcdtest: mining address: %v", err)) // unreachable: 20-byte hash
	}
	return addr.EncodeAddress()
}

// MiningScript is the output script coinbases pay to.
func (w *Wallet) MiningScript() []byte { return append([]byte(nil), w.mining...) }

// Params are the wallet's chain parameters.
func (w *Wallet) Params() *chaincfg.Params { return w.params }

// newKeyLocked derives the next key. w.mu must be held (or w unshared).
func (w *Wallet) newKeyLocked() uint32 {
	idx := uint32(len(w.keys))
	w.keys = append(w.keys, deriveKey(w.seed, idx))
	return idx
}
