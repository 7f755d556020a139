// Package wireframe is Bitcoin P2P v1 message framing: the 24-byte message
// header (network magic, command, payload length, checksum), the checksum
// (the first 4 bytes of the payload's double SHA-256), and the prefix of a
// BIP-157 cfilter payload (filter type, block hash, filter length).
//
// It is the one definition of those bytes that the filter store and the
// P2P server share: the store keeps each filter's cfilter checksum
// (CFilterHasher) so that the server can frame a cfilter message
// (PutHeader, PutCFilterPrefix) without hashing the filter again, and the
// HTTP API writes the same prefix as Bitcoin Core's serialized BlockFilter.
//
// It is pure code over byte slices: no I/O, no connection state, no limits
// beyond the protocol's own. What a server accepts from a peer (per-command
// caps, deadlines, budgets) is the P2P server's policy, not framing.
package wireframe
