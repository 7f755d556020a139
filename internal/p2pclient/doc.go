// Package p2pclient is a light client's side of one Bitcoin P2P
// connection: the v1 transport handshake, frames read with a payload cap
// per command checked before anything is allocated, pings answered, every
// byte counted, and request helpers for what BIP-157 and BIP-37 wallets
// ask — headers, compact filters and their headers and checkpoints, blocks,
// filterload and filtered blocks (merkleblock plus the matched
// transactions, decoded with bloom.DecodeMerkleBlock rather than wire's
// decoder, which allocates from declared counts).
//
// It is shared by cmd/cfscan (a wallet-side scanner against any peer) and
// by tests that need to speak to btcd or cfindexd as a raw client (the
// BIP-37 differential against btcd in package bloom). cmd/cfbench's
// wirePeer and p2p's test rawClient predate it and are left alone: the
// first is tuned for a load generator that must not spend CPU on
// checksums, the second is a test helper inside the server's package.
//
// A Peer is not safe for concurrent use: one goroutine sends a request and
// reads its answer. Responses are matched to requests by their content
// (stop hashes, block hashes) and, where a peer may send a variable number
// of messages (filtered blocks), by a ping sent after the request: peers
// answer a connection's messages in order, so everything before the pong
// belongs to the request. Unsolicited messages (inv, addr, sendcmpct,
// feefilter, ...) are read and dropped.
//
// Untrusted input: every frame is checked for network magic, a printable
// command, a payload no larger than that command's cap (MaxBlockPayload
// for blocks and transactions, 4 MB for anything unknown — Core's
// MAX_PROTOCOL_MESSAGE_LENGTH) and its checksum; list messages,
// transactions and blocks have their declared counts checked against the
// payload (bounds.go, with internal/wirescan's count reader) before wire
// decodes them.
// Every read has a deadline (Options.Timeout, or the context's).
package p2pclient
