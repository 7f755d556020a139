package p2p

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/bip37"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Per-peer buffers and the sizes the memory bound is made of.
const (
	// peerReadBuffer and peerWriteBuffer size a peer's bufio reader and
	// writer.
	peerReadBuffer  = 16 << 10
	peerWriteBuffer = 64 << 10
	// maxUnsharedFrame is the largest frame built for one peer: a cfilter
	// carrying the largest filter wire lets a cfilter carry (a getheaders
	// answer, 162 KB, is smaller). Blocks are larger but shared between
	// peers through the block cache.
	maxUnsharedFrame = wireframe.HeaderSize + 1 + chainhash.HashSize + 5 + wire.MaxCFilterDataSize
	// decodedFactor bounds a decoded message plus what its handler derives
	// from it as a multiple of its payload.
	decodedFactor = msgread.DecodedFactor
	// relayFactor bounds a relayed transaction: the payload, its hex and
	// the JSON-RPC request carrying it.
	relayFactor = 5
	// maxQueueEntry is the largest entry of a send queue, as charged to
	// the send budgets: a chunk of cfilter frames in a pooled buffer of
	// chunkCap bytes, or one frame in a buffer of its own.
	maxQueueEntry = max(chunkCap, maxUnsharedFrame)
	// peerFixed is the rest a peer holds: a getcfilters answer's block
	// hashes (1,000 × 32 bytes), its send queue's slots, goroutine stacks.
	peerFixed = MaxGetCFilters*chainhash.HashSize + sendQueueFrames*80 + 32<<10
	// answerBuild bounds an answer built under a filter-work slot: 2,000
	// headers, their pointers and the encoded frame.
	answerBuild = 512 << 10
	// blockFetchFactor: a fetch holds a block (of at most
	// blockproxy.MaxBlockBytes) about that many times (hex reply,
	// decoded, encoded).
	blockFetchFactor = 5
	// wireScriptSlab is what btcd's wire borrows for the scripts
	// of every block or transaction it decodes: a 4 MiB slab from a free
	// list that keeps up to 125 of them for good. The server's decodes
	// are the block fetches (MaxBlockFetches at once) and, with BIP-37,
	// one block at a time, so that many slabs stay on the heap whatever
	// the blocks' sizes.
	wireScriptSlab = 4 << 20
	// discouragedEntryBytes is the cost of one discouragement entry.
	discouragedEntryBytes = 64
	// v2PeerBytes is what a v2 peer holds beyond a v1 peer: v2conn's read
	// buffer (8 KiB; its small-packet buffer stands in for the v1 read
	// buffer, a decrypted packet for a v1 payload), the writer's reused
	// plaintext and a sealed small packet (16 KiB each), and the
	// initiator's garbage (4 KiB) during the handshake.
	v2PeerBytes = 8<<10 + 2*16<<10 + 4<<10
)

// MemoryBound returns the most heap the P2P server can hold for its peers
// under cfg, whatever they send, in bytes: per peer its buffers, a decoded
// request, and the entry it builds before its send budget takes it (a
// filter chunk read ahead, or its largest unshared frame); the answers
// queued under the send budgets (the reserves and the shared pool, which
// add up to SendBudget, and one entry's overdraft per peer); large frames
// being decoded under the receive budget; answers being built in the work
// slots; the block cache, fetches in flight and the upload target's
// groups; the discouragement list; with the silent-payment type its larger
// chunks and answers (spAnswerBuild); with v2 (Config.DisableV2 false)
// each peer's v2 buffers and the messages being sealed (v2SealBudget);
// and, with BIP-37 serving, each peer's filter state and the decoded-block
// cache. The constants above are its terms. It is a worst case that needs
// every peer to hit every limit at once.
func MemoryBound(cfg Config) int64 {
	c := cfg.withDefaults()
	n := int64(c.MaxPeers)
	unshared := int64(maxUnsharedFrame)
	queueEntry := int64(maxQueueEntry)
	var bloomBytes int64
	if c.Bloom.Enabled {
		unshared = max(unshared, bip37.MaxTxFrame)
		queueEntry = max(queueEntry, bip37.MaxTxFrame)
		bloomBytes = n * bip37.PeerBytes
		if c.Blocks != nil {
			bloomBytes += c.Bloom.FilteredBlockCacheBytes + blockproxy.MaxDecodedBlock + wireScriptSlab
		}
	}
	work := int64(answerBuild)
	if c.SilentPayments != nil {
		queueEntry, work = max(queueEntry, spMaxQueueEntry), max(work, spAnswerBuild)
	}
	// A peer builds one entry at a time outside its budget: a chunk of
	// cfilter frames or another frame, at most a queue entry (which is at
	// least the largest unshared frame).
	perPeer := int64(peerReadBuffer+peerWriteBuffer+decodedFactor*msgread.MaxSmallFrame+peerFixed) +
		max(queueEntry, unshared)
	queued := min(n*max(int64(c.PeerSendBudget), queueEntry), c.SendBudget+n*queueEntry)
	recv := decodedFactor * c.RecvBudget
	if c.RelayTx {
		recv = relayFactor * c.RecvBudget
	}
	if !c.DisableV2 {
		// A large v2 packet's ciphertext and plaintext are live together
		// only while it is decrypted, before anything is decoded: within
		// the decoded factor. Large messages being sent are sealed within
		// v2SealBudget; the handshake gate keeps a bucket per network group
		// within peerpolicy.HandshakeGateBytes.
		perPeer += v2PeerBytes
		recv += v2SealBudget + peerpolicy.HandshakeGateBytes
	}
	var blocks int64
	if c.Blocks != nil {
		blocks = c.BlockCacheBytes + int64(c.MaxBlockFetches)*(blockFetchFactor*blockproxy.MaxBlockBytes+wireScriptSlab) +
			peerpolicy.MaxUploadGroups*peerpolicy.UploadGroupBytes
	}
	return n*perPeer + queued + recv + blocks + bloomBytes +
		int64(c.MaxFilterWork)*work +
		int64(c.MaxDiscouraged)*discouragedEntryBytes
}
