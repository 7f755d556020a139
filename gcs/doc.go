// Package gcs builds, serializes, parses and queries Golomb-coded sets
// (GCS): the BIP-158 compact block filters cfindexd serves, and the Cashu
// compact filters (NUT-25 as deployed, and the NUT-23 draft).
//
// # What it owns, and what it must not do
//
// gcs owns the set encoding and nothing else: hashing items into a range,
// Golomb-Rice coding, the two serialized forms, validation of untrusted
// filter bytes, membership queries, and a fast allocation-free builder for
// BIP-158 basic filters (BasicBuilder). It does not know what a block is:
// choosing the elements of a block (output scripts, spent scripts, the
// OP_RETURN and empty-script rules) is indexer's job, and filter headers
// belong to headers. It does no I/O, keeps no package-level state and does
// not log.
//
// # Model
//
// A set of N distinct items with parameters P (Golomb-Rice remainder bits)
// and M (inverse false-positive rate) is encoded by hashing every item to
// 64 bits with a Hasher, reducing the hash into [0, N·M) with HashToRange
// (the high word of a 128-bit product, never a modulo), sorting, and
// writing the differences of consecutive values as a unary quotient
// (d >> P ones, then a zero) followed by the P low bits of d, MSB first,
// zero-padded to a byte. Items are de-duplicated by their bytes before
// counting N; different items whose 64-bit hashes collide each count.
//
// Two hash families implement Hasher: SipHasher (SipHash-2-4, keyed for
// BIP-158 with BlockKey, the first 16 bytes of the block hash in internal
// byte order) and the Cashu hashers CashuNUT25Hasher (two rounds of
// MurmurHash3-x86-32 from internal/murmur3, the module's one copy, shared
// with the BIP-37 Bloom filters of package bloom; spaolacci/murmur3's
// 32-bit walk trips the race detector's checkptr) and CashuNUT23Hasher (the first,
// "low", word of MurmurHash3-x64-128 from spaolacci/murmur3). Pass a
// SipHasher held in a Hasher variable: converting the 16-byte value to an
// interface on every call allocates.
//
// There are two serialized forms: the bare stream (Filter.Bytes,
// NewFilter; N travels beside it, as in Cashu) and the BIP-158 wire form,
// a canonical CompactSize N followed by the stream (Filter.BytesWithN,
// NewFilterWithN, BasicBuilder.AppendFilter). The empty set is N=0: the
// wire form is the single byte 0x00 and the bare stream is empty. N is
// read and written by internal/wirescan, the module's one CompactSize
// codec; compactsize.go maps its errors onto this package's sentinels.
//
// A Filter is immutable and safe for concurrent readers. Queries (Match,
// MatchAny) decode the stream once, front to back, merging it with the
// sorted query values; the set is never materialised.
//
// # Untrusted input
//
// NewFilter and NewFilterWithN validate the whole stream in one decode
// pass when the filter is made, so a Filter in hand is well formed and a
// query can never fail or run off the end halfway. They reject, each with
// its sentinel from errors.go (wrapped with context, test with errors.Is):
// P outside 1..32 (ErrBadP); M outside 1..2^32-1 (ErrBadM); N ≥ 2^32
// (ErrNTooLarge); a non-canonical CompactSize (ErrNonCanonicalN); an N
// that needs more than the available bits at P+1 bits per element, checked
// before decoding (ErrNExceedsData, which also wraps ErrTruncated); a
// stream or prefix that ends inside an element (ErrTruncated); a value
// ≥ N·M (ErrValueOutOfRange); any byte after the one holding the last bit
// of the N-th element (ErrTrailingData; for N=0 the stream must be empty);
// and non-zero padding bits in that last byte (ErrNonZeroPadding). As a
// result an accepted input is exactly what an encoder produces for its
// values: parse, then BytesWithN, gives back the input.
//
// btcutil/gcs differs: FromBytes and FromNBytes only copy the bytes. A
// stream that is truncated or claims too large an N is found only while
// matching and then reads as "no match" (io.EOF is swallowed); trailing
// bytes, non-zero padding and values ≥ N·M are accepted; P=0 is accepted
// and M is not checked. Its HashMatchAny path (chosen when there are at
// least N/2 queries) compares only the low 32 bits of values, so with
// N·M ≥ 2^32 it can report matches we do not. Bitcoin Core rejects excess
// data but not non-zero padding; we reject padding too because no
// conforming encoder writes it and the filter header commits to the exact
// bytes, so such a filter could not verify anyway.
//
// # Building
//
// Build (any Hasher and Params) and BasicBuilder (BIP-158 basic filters)
// share one pipeline: hash every element, sort (hash, index) pairs with one
// bucket pass over the top bits of the uniform hashes (an MSD radix step
// finished by insertion sort; skewed buckets fall back to a comparison
// sort; 16 pairs or fewer take a plain insertion sort), drop repeats by comparing bytes only within runs of equal hashes,
// and encode straight from the sorted hashes, since HashToRange is
// monotone in the hash: one sort in total. The 64-bit bit writer and
// reader move whole words; the query loop keeps its reader in registers and
// decodes the unary part with one leading-zero count. BasicBuilder keeps its elements in a reused
// arena, so a steady-state AppendFilter allocates only the output (nothing
// if dst has room). It ignores empty elements, as btcutil's
// builder.BuildBasicFilter skips empty scripts; Build treats an empty item
// as an item. For the same element list BasicBuilder produces exactly the
// bytes of btcutil's builder (WithKeyHash, AddEntry per non-empty element,
// Build, NBytes).
package gcs
