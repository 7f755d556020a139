// Package gcs builds, serializes, parses and queries Golomb-coded sets
// (GCS): the BIP-158 compact block filters cfindexd serves, and the Cashu
// compact filters (NUT-25 as deployed, and the NUT-23 draft).
//
// gcs owns the set encoding and nothing else: hashing items into a range,
// Golomb-Rice coding, the two serialized forms, validation of untrusted
// filter bytes, membership queries, and an allocation-free builder for
// BIP-158 basic filters (BasicBuilder). It does not know what a block is:
// choosing a block's elements is the indexer's job, and filter headers
// belong to package headers. It does no I/O, keeps no package-level state
// and does not log.
//
// # Model
//
// A set of N distinct items with parameters P (Golomb-Rice remainder bits)
// and M (inverse false-positive rate) is encoded by hashing every item to
// 64 bits with a Hasher, reducing each hash into [0, N·M) with HashToRange,
// sorting, and writing the differences of consecutive values as a unary
// quotient (d >> P ones, then a zero) followed by the P low bits of d, MSB
// first, zero-padded to a byte. Two hash families implement Hasher:
// SipHasher (BIP-158, keyed with BlockKey) and the Cashu hashers.
//
// There are two serialized forms: the bare stream (Filter.Bytes, NewFilter;
// N travels beside it, as in Cashu) and the BIP-158 wire form, a canonical
// CompactSize N followed by the stream (Filter.BytesWithN, NewFilterWithN,
// BasicBuilder.AppendFilter). The empty set is N=0: the wire form is the
// single byte 0x00 and the bare stream is empty.
//
// A Filter is immutable, safe for concurrent readers and always well
// formed: NewFilter and NewFilterWithN validate the whole stream when the
// filter is made, so a query never fails halfway. Queries decode the stream
// once, front to back, merging it with the sorted query values.
//
// # Caveats
//
//   - The parsers are stricter than btcutil/gcs, which only copies the
//     bytes and finds a malformed stream, if at all, while matching (it
//     then reads as "no match"), and stricter than Bitcoin Core, which
//     accepts non-zero padding. An accepted input is exactly what an
//     encoder produces: parse, then BytesWithN, gives back the input.
//   - btcutil's MatchAny compares only the low 32 bits of values on one
//     path, so with N·M ≥ 2^32 it can report matches this package does not.
//   - BasicBuilder ignores empty elements (as btcutil's builder does);
//     Build treats an empty item as an item.
package gcs
