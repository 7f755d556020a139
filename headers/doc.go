// Package headers holds the pure chain arithmetic of BIP-157 compact block
// filters: filter hashes and the filter-header chain, getcfcheckpt checkpoint
// heights, Bitcoin Core's block locator (building one and finding the
// fork point a peer's locator names), the proof-of-work arithmetic of
// block headers (compact targets, hashes as numbers, a block's work) that
// the follower, cfscan and the test chains' miner share, and the
// networks' difficulty rules (NextBits, CheckProofOfWork) that a read
// replica checks headers against.
//
// Everything here is a pure function of its arguments. The package owns no
// storage, does no I/O, keeps no state and logs nothing; callers (store,
// indexer, p2p, rest) supply the data and decide what to do with a mismatch.
// It must not grow a dependency on those packages.
//
// Byte order: chainhash.Hash values are in internal (wire) order throughout.
// Their String form is the reversed "display" order that bitcoind's RPC and
// the BIP-158 test vectors print.
package headers
