// Package replica makes a cfindexd without a node: it fills the store from
// a published layout (Bootstrap: the ranges a publisher put in a bucket, or
// another cfindexd's HTTP, read through replica/source) and then keeps it
// at its primary's tip as a BIP-157 light client of that primary
// (Follower, over internal/p2pclient).
//
// Nothing reaches the store unchecked. Every header links to the one
// before it (from the network's genesis), meets the proof of work of its
// bits, and carries the bits the network's difficulty rules require
// (headers.NextBits); every filter chains, through its filter hash, to the
// filter header published (or sent) for it, from the store's own filter
// header below. A range whose objects fail any check is refused with an
// error that names the object, and nothing of it is committed; the store
// keeps what was checked before, so a restart resumes from the store's
// tip. Commits go through store.Store.CommitBatch and store.Store.Reorg,
// as the indexer's do.
//
// The package serves nothing and knows no listener: cmd/cfindexd runs the
// P2P and HTTP servers from the store once Bootstrap has returned.
package replica
