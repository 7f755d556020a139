// Package load generates light-client load for cmd/cfbench and checks
// every answer: Run drives BIP-157 peers in closed loops (getcfilters and
// getcfheaders ranges from a fixed seed, one request in flight per peer)
// and StartBloom drives BIP-37 wallets (realistic filters loaded, then
// batches of filtered blocks up to a ping), each measured over a window.
// Wallet is one honest BIP-37 wallet whose every merkleblock and matched
// transaction is compared byte for byte with what btcd's bloom package
// builds for its filter (WalletChain): cfbench hostile runs it beside the
// attacks on BIP-37.
//
// Peers are p2pclient.Conns read with ReadRaw: answers are read as raw
// frames in place and compared byte for byte, checksums included, with
// the frames wire encodes from btcd's own filters (Expected, fetched over
// RPC before the load), never decoded or hashed, so that the generator's
// own CPU, on the same machine as the server it measures, stays small.
//
// It talks only to the addresses it is given and keeps no package state.
package load
