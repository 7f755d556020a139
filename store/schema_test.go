package store

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/wireframe"
)

// TestHeaderCodecMatchesWire pins the store's allocation-free header codec
// to wire's own serialisation.
func TestHeaderCodecMatchesWire(t *testing.T) {
	for _, r := range genChain(70, nil, 20) {
		var want bytes.Buffer
		if err := r.Header.Serialize(&want); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, headerLen)
		putHeader(got, &r.Header)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("height %d: putHeader differs from wire", r.Height)
		}
		var viaWire wire.BlockHeader
		if err := viaWire.Deserialize(bytes.NewReader(got)); err != nil {
			t.Fatal(err)
		}
		if dec := decodeHeader(got); dec != viaWire {
			t.Fatalf("height %d: decodeHeader %+v, wire %+v", r.Height, dec, viaWire)
		}
	}
}

// FuzzDecodeValues feeds arbitrary bytes, as a damaged file would hold, to
// every value decoder: none may panic, and whatever decodes must encode
// back to the same bytes.
func FuzzDecodeValues(f *testing.F) {
	r := genChain(71, nil, 2)[1]
	f.Add(staleValue(&r, cfilterChecksum(&r.Hash, r.Filter)))
	f.Add(backfillValue(3, 900_000))
	f.Add(tipValue(tipOf(r)))
	f.Add(headerValue(7, r.Hash, &r.Header))
	f.Add(filterHeaderValue(7, &r.FilterHeader, &r.FilterHash))
	f.Add(checksumValue(7, cfilterChecksum(&r.Hash, r.Filter), r.Filter))
	f.Add([]byte{})
	f.Add(make([]byte, staleFixedLen))
	f.Fuzz(func(t *testing.T, v []byte) {
		hash := chainhash.DoubleHashH(v)
		if rec, sum, err := decodeStale(hash, v); err == nil {
			if got := staleValue(&rec, sum); !bytes.Equal(got, v) {
				t.Fatalf("stale round trip: %x != %x", got, v)
			}
			h, prev, err := stalePrevAndHeight(hash, v)
			if err != nil || h != rec.Height || prev != rec.Header.PrevBlock {
				t.Fatalf("stalePrevAndHeight disagrees with decodeStale: %v", err)
			}
		} else if _, _, err := stalePrevAndHeight(hash, v); err == nil {
			t.Fatal("stalePrevAndHeight accepts what decodeStale rejects")
		}
		if tip, err := decodeTip(v); err == nil && !bytes.Equal(tipValue(tip), v) {
			t.Fatal("tip round trip")
		}
		// Values of the checked lengths only: the others are looked up
		// in the backfill marker, which this test has no store for.
		var b buckets
		if len(v) == headerValueLen {
			if h, hdr, err := b.decodeHeaderAt(7, v); err == nil && !bytes.Equal(headerValue(7, h, &hdr), v) {
				t.Fatal("header value round trip")
			}
		}
		if len(v) == filterHeaderValueLen {
			if fh, fhash, err := b.filterHeaderAt(7, v); err == nil && !bytes.Equal(filterHeaderValue(7, &fh, &fhash), v) {
				t.Fatal("filter header value round trip")
			}
		}
		if next, end, err := decodeBackfill(v); err == nil && (next >= end || !bytes.Equal(backfillValue(next, end), v)) {
			t.Fatal("backfill marker round trip")
		}
		if len(v) == checksumValueLen {
			var ck wireframe.CFilterHasher
			if sum, err := b.checkedSum(7, v, r.Filter, &r.Hash, &ck); err == nil && !bytes.Equal(checksumValue(7, sum, r.Filter), v) {
				t.Fatal("checksum round trip")
			}
		}
		if h, err := decodeHeight(v); err == nil && !bytes.Equal(heightKey(h), v) {
			t.Fatal("height round trip")
		}
		if h, err := decodeHash(v); err == nil && !bytes.Equal(h[:], v) {
			t.Fatal("hash round trip")
		}
	})
}
