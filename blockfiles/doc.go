// Package blockfiles reads Bitcoin Core's blocks directory: the blk and
// rev files, xor.dat, and the undo data that holds the outputs each block
// spends.
//
// # Formats (src/node/blockstorage.cpp, src/undo.h, src/compressor.cpp)
//
//   - blkNNNNN.dat: records of network magic, 4-byte LE size and the block.
//     revNNNNN.dat holds the undo data of the blocks of blk file NNNNN, in
//     the order Core connected them: magic, size, a CBlockUndo and
//     SHA256d(parent block hash ‖ CBlockUndo).
//   - xor.dat (Core >= 28): every byte at file offset i is XORed with
//     key[i%8]. A missing file or a zero key means plain files.
//   - Core preallocates files in chunks of raw zero bytes: a zero record
//     header ends a walk, as does the end of the file.
//   - CBlockUndo: per non-coinbase transaction and input a coin of
//     VARINT(height*2+coinbase), a legacy dummy, a compressed amount and a
//     compressed script (compress.go).
//
// These have not changed since Core 0.8 (xor.dat since 28.0).
//
// # Model
//
// Dir never reads Core's LevelDB block index (the running node holds it
// open and compacts it underneath a reader). It walks the record headers
// of the blk files, newest first and only until the asked block turns up,
// into an in-memory index of a few bytes per block; a miss walks what was
// appended since. A 32-bit hash prefix may be shared: every candidate is
// read and checked (hash, merkle root).
//
// A block's undo record is found in the rev file of the same number:
// records with the block's shape (its input counts) are tried starting
// after its parent's record when that was matched, else at the block's
// ordinal in its blk file, and the checksum decides. Two different records
// that fit (sibling blocks after a reorg) make the block ambiguous.
//
// A block that is not readable yet (not written, cut short, not connected
// or flushed, ambiguous) is ErrNotInFiles or another error the caller
// answers from elsewhere; data that cannot be decoded wraps ErrMalformed.
//
// # What it must not do
//
// Write, lock or keep open more than a few of Core's files, read the
// block index, or know where blocks come from otherwise (that is the
// prevout source's fallback in prevouts).
package blockfiles
