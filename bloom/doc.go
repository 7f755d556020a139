// Package bloom is BIP-37 — Bloom-filter light clients — as pure code: the
// filter a wallet loads into a peer (sizing, hashing, privacy noise and
// rotation), the matching a server does for it (Bitcoin Core's
// CBloomFilter::IsRelevantAndUpdate, byte for byte), and the filtered
// blocks it sends back (merkleblock with a partial merkle tree, then the
// matched transactions), with the wallet-side decoder and verifier of those
// merkleblocks.
//
// # What it owns, and what it must not do
//
// It owns the model and nothing else: no sockets, no peers, no policy
// about which filters a server accepts beyond Core's hard limits, no
// package-level state, no logging. The P2P server (package p2p) decides
// what to do with a filter whose EstimatedFPR is too high, charges the
// work to a peer's budget and sends the messages; cmd/cfscan is the wallet.
//
// # The model
//
// A filter is m = 8·Size bits and k hash functions; hash function i maps
// an element e to bit MurmurHash3_x86_32(seed = i·0xFBA4C795 + nTweak, e)
// mod m, bit b being bit b&7 of byte b>>3 (internal/murmur3 is the
// module's one MurmurHash3-x86-32, shared with gcs's Cashu filters; it
// lives in internal/ so that neither bloom nor gcs depends on the other).
// For n elements at false-positive rate p, ParamsFor gives
// m = −n·ln p / ln²2 bits (rounded down to bytes, at most 36,000 bytes)
// and k = (m/n)·ln 2 (rounded down, at most 50), and the rate after n
// elements is ExpectedFPR = (1 − e^(−k·n/m))^k. The light-client spec's
// numbers: n = 50, p = 0.0001 gives m = 952 bits, k = 13; n = 100,
// p = 0.01 gives m = 952 bits, k = 6 and a measured rate of 1.3 % over
// 10,000 non-members. A server cannot see n; it sees the fill (the
// fraction of bits set), and the chance that an unrelated element hits k
// set bits is EstimatedFPR = fill^k (≈ 2^−k for a well-sized filter);
// EstimatedElements inverts the fill into an element count.
//
// Matching a transaction (MatchTxAndUpdate): the txid; then every output's
// non-empty script data pushes, in order, stopping at the first push that
// matches or the first operation that does not parse — on a match,
// BLOOM_UPDATE_ALL inserts the outpoint (txid ‖ index LE) and
// BLOOM_UPDATE_P2PUBKEY_ONLY inserts it only for pay-to-pubkey and bare
// multisig outputs (Core's Solver, MatchPayToPubkey and MatchMultisig to
// the letter); then, if nothing matched, every input's spent outpoint and
// scriptSig pushes. Witnesses are never matched. FilterBlock runs that
// over a block in order, the filter updating as it goes, and builds the
// partial merkle tree of the matches (Core's TraverseAndBuild); the
// matched transactions follow in block order, as Core's vMatchedTxn.
//
// Wallet privacy (BuildWalletFilter, Rotation): the spec's defaults are
// p = 0.0001, noise 5 % and a new filter every 100 blocks; DefaultPrivacy
// also sizes a filter for at least 50 elements (the spec's "50 elements"),
// because a filter sized for a handful of elements under
// BLOOM_UPDATE_ALL fills with every false positive's outpoint and its
// false positives cascade (a 4-element scan of a 168-block tx-rich regtest
// chain saw 53 false-positive transactions at 72 bits, 1 at 952).
// Noise is random 20-byte elements, at least ⌈5 %·n⌉ and then more until
// the filter has at least 5 % more bits set than the wallet's elements
// alone set (5 % more elements only set ≈ 3.5 % more bits at a fill of ½).
// The filter is sized for elements plus noise (or the floor). Each
// rotation epoch (height / interval) has its own tweak and noise, derived from a secret key by SHA-256, so filters
// from different epochs, or given to different peers under different keys,
// cannot be intersected bit by bit. (The spec's "at most 36,000 bits" is
// read as BIP-37's 36,000-byte cap, its "50 elements" as the sizing floor
// above.)
//
// # Where it differs from Bitcoin Core
//
//   - ParamsFor never returns an empty filter or k = 0 (Core's constructor
//     can, for n > m, and both match everything), and computes m/n in
//     floating point where Core divides integers, which sometimes gives
//     Core one hash function fewer. Filters a peer sends are taken as they
//     are (Load), so serving is unaffected.
//   - DecodeMerkleBlock, a wallet's decoder Core does not have, refuses
//     non-canonical CompactSizes and trailing bytes.
//   - FilterBlock takes the merkle root from the header when nothing
//     matched instead of rehashing the block; for any block whose header
//     commits to its transactions (every block from the node) this is the
//     same hash.
//
// Core before v0.21 kept isFull/isEmpty flags, refreshed after filterload:
// a filter loaded with all bits set matched everything without hashing, and
// one loaded with no bit set matched nothing until a filteradd. v0.21
// replaced them with the zero-size check alone (a zero-byte filter matches
// everything and ignores inserts, the CVE-2013-5700 guard); the only
// observable change is a filter loaded all-zero with k = 0, which now
// matches everything. We follow v31.
//
// # Where it differs from btcd (the differential test's oracle)
//
// btcd's btcutil/bloom and server answer differently in these cases, each
// pinned by TestDocumentedDifferencesFromBtcd:
//
//  1. A script that does not parse to the end: Core (and we) test the
//     pushes before the malformed push; btcd tests none of that script's
//     pushes (txscript.PushedData fails as a whole).
//  2. Empty pushes (OP_0, PUSHDATA of length 0): btcd tests them as the
//     empty element, so a filter that happens to contain "" matches every
//     P2WPKH, P2WSH and multisig scriptSig; Core skips them.
//  3. A zero-byte filter or k = 0: Core matches every transaction; btcd
//     matches none (it sets k to 0 for an empty filter and returns
//     "k > 0").
//  4. nFlags with reserved bits (say 5): Core masks with 3 (5 is
//     BLOOM_UPDATE_ALL); btcd compares the whole byte (5 updates nothing).
//  5. BLOOM_UPDATE_P2PUBKEY_ONLY's multisig test: btcd's GetScriptClass
//     counts any non-small-int opcode as a key, accepts m = 0 and m > n
//     and only OP_1..OP_16 as n; Core requires validly sized key pushes,
//     1 ≤ m ≤ n ≤ 20, and accepts n = 17..20 as minimal pushes.
//  6. Serving MSG_FILTERED_WITNESS_BLOCK: btcd answers it with
//     witness-serialized transactions; Core does not serve that inventory
//     type at all (it is not a block request type there) and sends the
//     transactions of MSG_FILTERED_BLOCK without witnesses. (Serving
//     behaviour; this package leaves the encoding to the server.)
//
// On the standard transactions of a btcd tx-rich chain and of mainnet
// blocks 0–14,131 and 277,647 none of 1–5 occurs unless a filter happens to
// contain the empty element (2, probability about the filter's rate).
//
// # Untrusted input
//
// Load enforces Core's filterload limits (ErrFilterTooLarge,
// ErrTooManyHashFuncs); FilterAdd the 520-byte element limit
// (ErrElementTooLarge). DecodeMerkleBlock checks every declared count
// against the bytes left before allocating (a merkleblock declaring
// 400,000 hashes in 252 bytes costs ≈2 KB, where wire.MsgMerkleBlock
// allocates 16 MB); ExtractMatches refuses every tree Core's ExtractMatches
// refuses (ErrBadPartialTree), including CVE-2012-2459's duplicated
// subtrees, and its work is bounded by the flag bits of the message;
// Verify also compares the root with the header's
// (ErrMerkleRootMismatch). A partial merkle tree cannot rule out
// CVE-2017-12842 (a 64-byte transaction's halves presented as txids by a
// peer lying about the transaction count); callers check that each
// matched transaction they receive hashes to its txid and is not 64 bytes
// long. Fuzz targets cover the decoder, the tree, the script walk (against
// btcd's tokenizer) and the matcher.
//
// # The p2p announcement filter
//
// p2p's rollingBloom (which block hashes a peer knows) stays where it is:
// it is a keyed SipHash filter with double hashing, private to the server,
// where BIP-37's MurmurHash3 with a tweak the peer chooses would let a peer
// craft collisions. The two share only the textbook sizing formula.
//
// # Cost
//
// Matching needs no allocation; on mainnet block 277,647 a transaction
// costs ≈0.7 µs against a realistic filter (n = 200, p = 0.0001), 2.6×
// faster than btcutil, and a filtered block ≈150 µs with nothing matched
// (3× btcutil), ≈190 µs with one transaction in twenty matched (go test
// -bench . ./bloom/).
package bloom
