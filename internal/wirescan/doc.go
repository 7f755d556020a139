// Package wirescan reads Bitcoin's serialization in place — CompactSize
// integers, declared counts, length-prefixed byte strings, transactions
// and blocks — for every decoder in the module that meets those bytes, and
// writes CompactSize for every encoder.
//
// # What it owns
//
//   - The one CompactSize codec: ReadCompactSize and Reader.CompactSize
//     read it, AppendCompactSize, PutCompactSize and CompactSizeLen write
//     it.
//   - Reader.Count: a declared count checked against the bytes that remain,
//     so a caller may allocate for it.
//   - Reader.Tx and Reader.Block: the one structure walk of transactions
//     and blocks, handing out scripts and outpoints as subslices.
//   - ScanBlock and ScanTx: a whole block or transaction read in place and
//     checked, for every reader of the node's blocks.
//
// A Reader comes in two strengths: NewReader enforces what wire and Core
// enforce, no more and no less; NewCountReader only bounds counts, for a
// walk that runs before wire decodes the same bytes.
//
// The users sit in layers that do not import each other (gcs, bloom,
// wireframe, p2p, the node clients, blockfiles, prevouts, mempool,
// httpapi), so one shared
// package below all of them is the only place one codec can live; it is
// internal because it is not API. Each user maps this package's sentinels
// onto its own. Bitcoin Core's VARINT of the undo files is a different
// encoding and stays in blockfiles.
//
// # What it must not do
//
// No allocation from a declared count, no copying of the input, no
// package-level state, no policy (limits such as MaxInvPerMsg belong to
// the caller). It never panics on any input.
package wirescan
