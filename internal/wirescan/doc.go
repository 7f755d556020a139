// Package wirescan reads Bitcoin's serialization in place — CompactSize
// integers, declared counts, length-prefixed byte strings, transactions
// and blocks — for every decoder in the module that meets those bytes, and
// writes CompactSize for every encoder.
//
// # What it owns
//
//   - ReadCompactSize and Reader.CompactSize: the one CompactSize reader,
//     refusing non-shortest encodings as Bitcoin Core and wire do
//     (ErrNonCanonical) and bytes that end inside one (ErrTruncated), with
//     no allocation. AppendCompactSize, PutCompactSize and CompactSizeLen
//     are the writers; TestCompactSizeRoundTrip holds all of them to wire's.
//   - Reader.Count: a declared count checked against the bytes that remain
//     at the smallest size an item can have (ErrCountExceedsData), so a
//     caller may allocate for it: a lie costs at most a small multiple of
//     the bytes that carry it.
//   - Reader.Tx and Reader.Block: the one structure walk of transactions
//     (BIP-144 marker and flag, inputs, outputs, witnesses, lock time) and
//     blocks (header, transaction count, transactions), with output scripts
//     and spent outpoints handed out as subslices and positions (Tx) from
//     which TxID and WTxID hash the ids without copying.
//   - ScanBlock and ScanTx: a whole block or transaction read in place
//     (ScannedBlock: header, txids, output scripts, spent outpoints), the
//     block checked against the hash asked for and its merkle root
//     (MerkleRoot), for every reader of the node's blocks.
//
// # Rules: NewReader and NewCountReader
//
// NewReader enforces what wire's witness-encoding decoder and Core
// enforce, no more and no less: FuzzTx and FuzzBlock hold it to wire's
// acceptance and reading (ids, scripts, outpoints) on arbitrary bytes.
// Whole-input rules stay with the caller: End for trailing bytes, and
// whether a block of no transactions is acceptable (wire decodes one;
// ScanBlock refuses it).
//
// NewCountReader only bounds counts and walks the structure: CompactSizes
// in any encoding, any non-zero byte after a zero marker taken as a
// witness flag, no superfluous-witness check. It serves a walk that runs
// before wire decodes the same bytes (internal/p2pclient), where wire
// enforces the rest itself and the walk's only job is that wire never
// allocates from a count the bytes cannot hold. It accepts everything
// NewReader accepts and reads it the same way (FuzzTx checks that too).
//
// # Users, and why the package lives in internal/
//
// The readers sit in different layers that do not import each other:
// gcs (a filter's N), bloom (merkleblock), nodeclient, nodep2p, blockfiles
// and prevouts (blocks read in place through ScanBlock and ScanTx, spent
// outputs, undo data, getblock 3's transactions), p2p
// (declared counts before wire, relayed transactions) and
// internal/p2pclient (counts before wire decodes a peer's tx or block).
// The writers serve gcs (N), store (the cfilter prefix its checksums
// cover), p2p (cfheaders), rest (bulk filter files), prevouts (getblock
// 3's block assembly) and internal/corefiles (undo data). A shared package
// below all of them is the only place one codec can live; it is internal
// because it is not API. Each user keeps its own
// error sentinels and maps this package's onto them (ErrMalformed,
// misbehaviour, ErrNonCanonicalN, ErrProtocol, ErrMalformedMerkleBlock).
//
// Bitcoin Core's VARINT of the undo files (blockfiles/compress.go) is a
// different encoding and stays there.
//
// # Speed
//
// The catch-up reads every block through Reader.Tx (BenchmarkScanBlock):
// the hot path is a one-byte CompactSize
// inlined into the walk, bounds checks against one slice, and appends into
// the caller's slices; hashing dominates the profile (about three quarters
// of the instructions). A Reader lives on the caller's stack; its only
// allocation is the txid hasher of the first witness transaction it hashes.
//
// # What it must not do
//
// No allocation from a declared count, no copying of the input, no
// package-level state, no policy (limits such as MaxInvPerMsg belong to
// the caller). It never panics on any input.
package wirescan
