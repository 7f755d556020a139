package store

import (
	"bytes"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Fault is one damaged value Verify or VerifyRange found.
type Fault struct {
	// Height is the block's height (for a stale block, the height its
	// value claims).
	Height uint32
	// Hash is the block's hash, as stored.
	Hash chainhash.Hash
	// Stale is true for a block of the stale set.
	Stale bool
	// What says what is wrong.
	What string
}

func (f Fault) String() string {
	where := "height"
	if f.Stale {
		where = "stale block at height"
	}
	return fmt.Sprintf("%s %d (%s): %s", where, f.Height, f.Hash, f.What)
}

// VerifyRange checks the active heights from..to inclusive (to capped at
// the tip) in one read transaction and calls fault with each damaged value
// it finds: a filter, filter hash, filter header or cfilter checksum that
// fails its CRC32C; a filter hash that is not dSHA256 of the filter; a
// filter header that does not chain onto the one below (BIP-157), so
// neither does the checkpoint at a multiple of headers.CheckpointInterval;
// a cfilter checksum that is not its block's; a block header that does not
// hash to its hash or does not link to the block below; and the tip's
// filter header. It returns the last height it checked and whether that
// is the tip (true on an empty store too). Values the upgrade's backfill has not reached are checked
// as far as they can be without their CRCs.
func (s *Store) VerifyRange(from, to uint32, fault func(Fault)) (last uint32, atTip bool, err error) {
	err = s.view(func(b *buckets) error {
		tip, ok, err := b.readTip()
		if err != nil || !ok {
			atTip = true
			return err
		}
		if from > tip.Height {
			last, atTip = tip.Height, true
			return nil
		}
		to = min(to, tip.Height)
		var prevFH, prevHash chainhash.Hash
		prevOK := from == 0
		if from > 0 {
			if v := b.headers.Get(heightKey(from - 1)); len(v) == headerValueLen {
				prevHash = chainhash.Hash(v[:hashLen])
			}
			fh, _, err := b.filterHeaderAt(from-1, b.filterHeaders.Get(heightKey(from-1)))
			prevOK = err == nil
			prevFH = fh
		}
		var ck wireframe.CFilterHasher
		for h := from; h <= to; h++ {
			k := heightKey(h)
			hv := b.headers.Get(k)
			hash, hdr, err := decodeHeaderValue(hv)
			if err != nil {
				return err
			}
			report := func(what string) { fault(Fault{Height: h, Hash: hash, What: what}) }
			var enc [headerLen]byte
			putHeader(enc[:], &hdr)
			if chainhash.DoubleHashH(enc[:]) != hash {
				report("block header does not hash to the block's hash")
			}
			if h > 0 && hdr.PrevBlock != prevHash {
				report("block header does not link to the block below")
			}
			prevHash = hash
			filter := b.filters.Get(k)
			if len(filter) == 0 || len(filter) > MaxFilterSize {
				return fmt.Errorf("%w: height %d has a header but a filter of %d bytes", ErrCorrupt, h, len(filter))
			}
			fh, fhash, fhErr := b.filterHeaderAt(h, b.filterHeaders.Get(k))
			sum, sumErr := b.checkedSum(h, b.checksums.Get(k), filter, &hash, &ck)
			for _, e := range []error{fhErr, sumErr} {
				if m, ok := AsMismatch(e); ok {
					report(m.What + " fails its checksum")
				} else if e != nil {
					return e
				}
			}
			filterOK := sumErr == nil
			if filterOK && sum != ck.Sum(&hash, filter) {
				report("cfilter checksum is not that of the block's filter")
			}
			if fhErr == nil {
				if filterOK && headers.FilterHash(filter) != fhash {
					report("filter hash is not dSHA256 of the filter")
				}
				if prevOK && headers.FilterHeaderFromHash(fhash, prevFH) != fh {
					what := "filter header does not chain onto the one below"
					if h%headers.CheckpointInterval == 0 && h > 0 {
						what += " (a cfcheckpt checkpoint)"
					}
					report(what)
				}
				if h == tip.Height && fh != tip.FilterHeader {
					report("filter header is not the tip's")
				}
			}
			prevFH, prevOK = fh, fhErr == nil
		}
		last, atTip = to, to == tip.Height
		return nil
	})
	if _, ok := AsMismatch(err); ok {
		err = nil // reported as faults
	}
	return last, atTip, err
}

// VerifyStale checks every block of the stale set and calls fault with
// each damaged one. It returns how many it checked.
func (s *Store) VerifyStale(fault func(Fault)) (int, error) {
	n := 0
	err := s.view(func(b *buckets) error {
		var ck wireframe.CFilterHasher
		return b.stale.ForEach(func(k, v []byte) error {
			n++
			hash := chainhash.Hash(k)
			r, sum, err := decodeStale(hash, v)
			if m, ok := AsMismatch(err); ok {
				fault(Fault{Height: m.Height, Hash: hash, Stale: true, What: "value fails its checksum"})
				return nil
			}
			if err != nil {
				return err
			}
			report := func(what string) { fault(Fault{Height: r.Height, Hash: hash, Stale: true, What: what}) }
			if headers.FilterHash(r.Filter) != r.FilterHash {
				report("filter hash is not dSHA256 of the filter")
			}
			if ck.Sum(&hash, r.Filter) != sum {
				report("cfilter checksum is not that of the block's filter")
			}
			var enc [headerLen]byte
			putHeader(enc[:], &r.Header)
			if !bytes.Equal(hash[:], chainhash.DoubleHashB(enc[:])) {
				report("block header does not hash to the block's hash")
			}
			return nil
		})
	})
	return n, err
}
