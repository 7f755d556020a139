package bip37

import (
	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/wireframe"
)

// The terms of the P2P server's memory bound that BIP-37 serving adds.
const (
	// PeerBytes is a peer's state: its filter (36,000 bytes at most), the
	// announcer's queue (the mirror subscription's buffer and as many
	// pending) and one mempool answer chunk (transactions and their inv),
	// one batch of the matched transactions of a filtered block serialized
	// ahead, and
	// the announcer goroutine's stack.
	PeerBytes = bloom.MaxFilterSize + 2*announceBuffer*8 + mempoolChunk*(2*8+2*msgread.InvVectSize) +
		matchedBatchBytes + 16<<10
	// MaxTxFrame is the largest transaction frame a peer is sent (a
	// matched or mempool transaction): a standard transaction's 400,000
	// bytes (MAX_STANDARD_TX_WEIGHT). A block may carry a larger,
	// non-standard one (up to 1 MB without witness); serving it exceeds
	// the bound by the difference, for as long as it is queued.
	MaxTxFrame = wireframe.HeaderSize + 400_000
)
