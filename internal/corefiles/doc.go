// Package corefiles is the module's one writer of Core-style blk files. It
// writes a chain of blocks as Bitcoin Core lays it out in its blocks
// directory — blkNNNNN.dat, revNNNNN.dat and xor.dat — for tests and
// benchmarks of the blocks-directory prevout source (blockfiles.Dir),
// keeps a chain in one plain file of blk records (chain files: the
// mainnet-shaped chain's cache), and loads the recorded Core v31 blocks directory in
// testdata/bitcoind-v31-blocksdir (Fixture).
//
// What it owns:
//   - Writer: blocks appended in the order Core would have stored them, each
//     connected on top of its parent as Core's ConnectBlock would, reorganising
//     the in-memory UTXO set (value, script, height, coinbase flag) across
//     branches, so stale branches get the undo data Core keeps for them;
//   - Core's encodings (src/serialize.h, src/compressor.cpp, src/undo.h):
//     VARINT, CompressAmount, compressed scripts (P2PKH, P2SH, P2PK with
//     compressed and fully valid uncompressed keys, raw), CBlockUndo, and the
//     record framing of blk and rev files (network magic, size, payload, and
//     for undo the checksum SHA256d(parent hash ‖ CBlockUndo));
//   - Core's file management: a new blk/rev pair when the next record would
//     reach the maximum file size (128 MiB, MAX_BLOCKFILE_SIZE), files
//     preallocated in chunks of raw zero bytes (16 MiB blk, 1 MiB rev), the
//     files left behind truncated to their used size, every written byte
//     XORed with the 8-byte key by its absolute file offset (Core >= 28), the
//     padding left raw.
//
// It is checked against the real thing: writing the recorded fixture's own
// blocks, in the fixture's order and with its key, gives the fixture's blk
// and rev files byte for byte (TestWriterReproducesCoreFixture).
//
// What it must not do: share code with package blockfiles (its reader is
// checked against this writer, and both against Core's bytes), keep
// package-level mutable state, or be imported by production code other than
// cmd/cfbench. It writes only into the directory it is given.
package corefiles
