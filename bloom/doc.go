// Package bloom is BIP-37 — Bloom-filter light clients — as pure code: the
// filter a wallet loads into a peer (sizing, hashing, privacy noise and
// rotation), the matching a server does for it (Bitcoin Core's
// CBloomFilter::IsRelevantAndUpdate, byte for byte), the filtered blocks it
// sends back (merkleblock with a partial merkle tree, then the matched
// transactions), and the wallet-side decoder and verifier of those
// merkleblocks.
//
// It owns the model and nothing else: no sockets, no peers, no policy about
// which filters a server accepts beyond Core's hard limits, no
// package-level state, no logging. The P2P server (package p2p) decides
// what to do with a filter whose EstimatedFPR is too high, charges the work
// to a peer's budget and sends the messages; cmd/cfscan is the wallet.
//
// # Model
//
// A filter is m = 8·Size bits and k hash functions; hash function i maps an
// element to bit MurmurHash3_x86_32(seed = i·0xFBA4C795 + nTweak, e) mod m
// (internal/murmur3, shared with gcs's Cashu filters). ParamsFor sizes a
// filter as BIP-37 does; a server cannot see the element count, only the
// fill, from which EstimatedFPR and EstimatedElements follow.
// MatchTxAndUpdate tests a transaction and, by the update mode, inserts the
// outpoints it matched; FilterBlock runs it over a block in order and
// builds the partial merkle tree of the matches. BuildWalletFilter and
// Rotation add the spec's privacy noise and a new tweak every epoch.
//
// # Caveats
//
//   - It follows current Core (v0.21 and later): a zero-byte filter or
//     k = 0 matches everything and ignores inserts. Where ParamsFor,
//     DecodeMerkleBlock and FilterBlock differ from Core, their docs say so.
//   - btcd's btcutil/bloom, the differential test's oracle, answers some
//     malformed or unusual scripts and flags differently; each case is
//     listed and pinned by TestDocumentedDifferencesFromBtcd.
//   - Everything a peer sends is untrusted: Load, FilterAdd,
//     DecodeMerkleBlock and PartialMerkleTree.ExtractMatches enforce Core's
//     limits and allocate nothing from a declared count. A partial merkle
//     tree cannot rule out CVE-2017-12842; see MerkleBlock.Verify for the
//     check callers owe.
//   - p2p's announcement filter (which block hashes a peer knows) is a
//     keyed SipHash filter private to the server, not this one: a tweak the
//     peer chooses would let it craft collisions.
package bloom
