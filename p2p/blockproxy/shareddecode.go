package blockproxy

import "github.com/btcsuite/btcd/chainhash/v2"

// Shared decoding: a recent block (Recency) is what every peer following
// the chain asks for, and the cache keeps the newest of them, so its first
// decoding is work for all of them, not for the peer that happened to ask
// first. That decoding goes ahead of every peer's own work and is charged
// to no peer (Work's shared); any later decoding of the same block (it was
// evicted meanwhile) is the asking peer's, so a peer cannot have the
// server decode a block for nothing more than once.

// firstDecoding reports whether hash, a recent block, has not been decoded
// before (since it became recent, within maxDecodedRecent).
func (c *DecodedCache) firstDecoding(hash chainhash.Hash) bool {
	c.mu.Lock()
	_, seen := c.decodedRecent[hash]
	n := len(c.decodedRecent)
	c.mu.Unlock()
	if seen {
		return false
	}
	if n >= maxDecodedRecent {
		c.forgetOldDecodings()
		c.mu.Lock()
		n = len(c.decodedRecent)
		c.mu.Unlock()
	}
	return n < maxDecodedRecent
}

// markDecoded records that hash, a recent block, was decoded.
func (c *DecodedCache) markDecoded(hash chainhash.Hash) {
	c.mu.Lock()
	c.decodedRecent[hash] = struct{}{}
	c.mu.Unlock()
}

// forgetOldDecodings drops the blocks no longer recent from
// decodedRecent (the Recency is asked without the lock held).
func (c *DecodedCache) forgetOldDecodings() {
	c.mu.Lock()
	hashes := make([]chainhash.Hash, 0, len(c.decodedRecent))
	for h := range c.decodedRecent {
		hashes = append(hashes, h)
	}
	c.mu.Unlock()
	var old []chainhash.Hash
	for _, h := range hashes {
		if !rankOf(c.proxy.recency, h).recent {
			old = append(old, h)
		}
	}
	c.mu.Lock()
	for _, h := range old {
		delete(c.decodedRecent, h)
	}
	c.mu.Unlock()
}
