package store

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// The arena encoding writes exactly the bytes of the schema's encoders
// (heightKey, headerValue, filterHeaderValue), so stores written before
// and after it hold the same values.
func TestEncodedBatchMatchesSchema(t *testing.T) {
	recs := genChain(7, nil, 300)
	enc, err := checkBatch(recs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		r := &recs[i]
		for _, c := range []struct {
			what      string
			got, want []byte
		}{
			{"height key", enc.heightKey(i), heightKey(r.Height)},
			{"header value", enc.headerValue(i), headerValue(r.Height, r.Hash, &r.Header)},
			{"filter header value", enc.filterHeaderValue(i), filterHeaderValue(r.Height, &r.FilterHeader, &r.FilterHash)},
		} {
			if !bytes.Equal(c.got, c.want) {
				t.Fatalf("record %d: %s %x, want %x", i, c.what, c.got, c.want)
			}
			if cap(c.got) != len(c.got) {
				t.Fatalf("record %d: %s has spare capacity %d", i, c.what, cap(c.got)-len(c.got))
			}
		}
		if got := enc.filterHash(i); got != r.FilterHash {
			t.Fatalf("record %d: filter hash %s, want %s", i, got, r.FilterHash)
		}
	}
}

// encode hashes a header exactly as wire's BlockHash does, for any field
// values (negative versions, timestamps past 2106 truncated alike).
func TestEncodedBatchHeaderHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed, 8))
	enc := newEncodedBatch(1)
	for i := range 1000 {
		r := BlockRecord{Height: rng.Uint32(), Header: wire.BlockHeader{
			Version:   int32(rng.Uint32()),
			Timestamp: time.Unix(rng.Int64N(1<<33), 0),
			Bits:      rng.Uint32(),
			Nonce:     rng.Uint32(),
		}}
		for j := range r.Header.PrevBlock {
			r.Header.PrevBlock[j] = byte(rng.Uint32())
			r.Header.MerkleRoot[j] = byte(rng.Uint32())
		}
		if got, want := enc.encode(0, &r), r.Header.BlockHash(); got != want {
			t.Fatalf("header %d (%+v): hash %s, want %s", i, r.Header, got, want)
		}
	}
}
