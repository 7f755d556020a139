package httpapi

import (
	"unsafe"

	"github.com/btcsuite/btcd/wire/v2"
)

// What the HTTP memory bound is made of.
const (
	// connFixed is what one open connection holds whatever it asks:
	// net/http's 4 KiB read and write buffers, the request's header block
	// (MaxHeaderBytes, counted apart, plus net/http's 4 KiB of slack),
	// the connection's goroutine stack and its state in the server and the
	// connection gate.
	connFixed = 4<<10 + 4<<10 + 4<<10 + 16<<10 + 4<<10
	// largestFilter is the largest filter a block can have (wire's limit
	// on a cfilter; a block of some 80,000 distinct tiny outputs comes
	// near it). Filters are chain data, not a client's choice.
	largestFilter = wire.MaxCFilterDataSize
	// headerAnswer is the largest headers answer: 2,000 decoded headers
	// and their serialization (the hex and JSON forms are encoded as they
	// are written, corerest/body.go).
	headerAnswer = MaxRange * (int(unsafe.Sizeof(wire.BlockHeader{})) + blockHeaderSize)
	// largestAnswer is the most one request's answer holds while a slow
	// client reads it: a block filter with its 38-byte prefix, or 2,000
	// headers.
	largestAnswer = max(largestFilter+64, headerAnswer)
	// spBlockBound is the most one block's silent-payment data holds
	// while it is served: a block of 4,000,000 weight units holds at most
	// 10,638 transactions with an input and a taproot output (376 units
	// each at least), each a tweak data record (at most 47 bytes), parsed
	// (48) and in BlindBit's hex JSON (70).
	spBlockBound = 4_000_000 / 376 * (47 + 48 + 70)
	// bulkChunk is what one bulk download holds: a chunk of filtersChunk
	// filters read from the store and the same appended to the file's
	// buffer, or a chunk of spChunk blocks of silent-payment data, read and
	// appended (2,000 headers or filter headers are far less).
	bulkChunk = max(2*filtersChunk*(largestFilter+9), 2*spChunk*spBlockBound)
)

// MemoryBound returns the most heap the HTTP server can hold under cfg,
// whatever clients send, in bytes:
//
//	MaxConns × (32 KiB + MaxHeaderBytes      a connection and its request
//	            + 368 KB)                    the largest answer, held while it is written
//	+ MaxBulkInFlight × 2 × 64 × 256 KiB     bulk filter chunks (read, and appended)
//
// The answers are the worst case: 2,000 headers, or a filter of wire's
// maximum size. Reaching the bound needs every connection to ask for the
// largest answer and stop reading at once; idle keep-alive connections
// hold the first term only.
func MemoryBound(cfg Config) int64 {
	c, err := cfg.withDefaults()
	if err != nil {
		c, _ = Config{}.withDefaults()
	}
	perConn := int64(connFixed + c.MaxHeaderBytes + largestAnswer)
	return int64(c.MaxConns)*perConn + int64(c.MaxBulkInFlight)*bulkChunk
}
