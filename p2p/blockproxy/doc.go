// Package blockproxy fetches the blocks P2P peers ask for from the node
// and keeps them cached, encoded and decoded, within byte bounds.
//
// Proxy.Get serves a block's encoding (with witnesses or without): from
// a cache of encoded blocks, bounded in bytes and shared between peers
// (many peers asking for a new tip cost one fetch), else from the node
// through a Gate, which bounds fetches in progress across peers (to one
// while the indexer needs the node) and grants them to the requester
// group with the least recent service (fetches granted, decayed), then in
// turns between the peers of a group, one fetch in progress per peer. Callers asking for a block being fetched join that
// fetch; a caller that leaves does not fail the others.
//
// DecodedCache.Get serves a block decoded, with its txids, for BIP-37
// filtered blocks: decoded from the encoded cache when the block is
// there, else fetched through the Proxy. Every decoded block alive counts
// against the cache's bound, pinned ones included; blocks are decoded one
// at a time under the caller's CPU meter (the work callback), the decode
// slot granted to the peer with the least recent decoding
// (peerpolicy.FairQueue) and never held while waiting: a block that does
// not fit is dropped and decoded again once its bytes are reserved.
//
// Both caches keep recent blocks (Recency, set with Proxy.WithRecency:
// the server's RecentBlocks most recent blocks of the active chain, what
// wallets ask for) ahead of others: a block that is not recent is evicted
// first, least recently used first, then the recent block of the lowest
// height, so that historical downloads never churn out the new blocks
// many peers read.
//
// Of peers the package knows only the Requester each call names (a group
// and a peer, opaque numbers); nothing of the upload target or what is
// served: the server (package p2p) decides which blocks may be fetched,
// and accounts what it sends.
package blockproxy
