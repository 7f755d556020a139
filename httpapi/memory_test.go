package httpapi

import "testing"

// The HTTP bound with the defaults, and each cap moves it by its share.
func TestMemoryBoundDefaults(t *testing.T) {
	def := MemoryBound(Config{})
	if got := def >> 20; got < 400 || got > 500 {
		t.Fatalf("default HTTP bound %d MiB, documented as about 460", got)
	}
	perConn := int64(connFixed + DefaultMaxHeaderBytes + largestAnswer)
	if more := MemoryBound(Config{MaxConns: DefaultMaxConns + 10}); more-def != 10*perConn {
		t.Errorf("10 more connections add %d bytes, want %d", more-def, 10*perConn)
	}
	if fewer := MemoryBound(Config{MaxBulkInFlight: 2}); def-fewer != 6*bulkChunk {
		t.Errorf("6 fewer bulk downloads save %d bytes, want %d", def-fewer, 6*bulkChunk)
	}
	// An answer is never built beyond its raw bytes: the largest raw
	// answers are what the bound holds per connection.
	if largestAnswer < largestFilter || largestAnswer < 2000*blockHeaderSize {
		t.Errorf("largest answer %d below a filter of %d or 2,000 headers", largestAnswer, largestFilter)
	}
}
