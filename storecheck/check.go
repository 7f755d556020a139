package storecheck

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Fault is one damaged value CheckRange or CheckStale found.
type Fault struct {
	Height uint32
	Hash   chainhash.Hash
	What   string
	// Stale is true for a block of the stale set.
	Stale bool
}

// String describes the fault for a log line or verify's report.
func (f Fault) String() string {
	if f.Stale {
		return fmt.Sprintf("stale block at height %d (%s): %s", f.Height, f.Hash, f.What)
	}
	return fmt.Sprintf("height %d (%s): %s", f.Height, f.Hash, f.What)
}

// CheckRange reads the active heights from..to inclusive (to capped at the
// tip) one at a time through the store's checked reads, and calls fault
// with each damaged value: a filter, filter hash, filter header or cfilter
// checksum, block header or block hash failing its CRC32C (the read also
// tells store.Options.OnMismatch);
// a filter hash that is not dSHA256 of the filter; a filter header that does
// not chain onto the one below (BIP-157), and so neither does any cfcheckpt
// checkpoint above it; a cfilter checksum that is not its block's; a block
// header that does not hash to its hash or link to the block below; and the
// tip's filter header. It returns the last height it checked and whether
// that is the tip (true on an empty store too).
func CheckRange(st *store.Store, from, to uint32, fault func(Fault)) (last uint32, atTip bool, err error) {
	tip, ok := st.Tip()
	if !ok || from > tip.Height {
		return tip.Height, true, nil
	}
	to = min(to, tip.Height)
	var prev *store.BlockRecord
	if from > 0 {
		if recs, err := st.FiltersByHeight(from-1, from-1); err == nil {
			prev = &recs[0]
		} else if !errors.Is(err, store.ErrChecksumMismatch) {
			return 0, false, err
		}
	}
	var ck wireframe.CFilterHasher
	for h := from; h <= to; h++ {
		recs, err := st.FiltersByHeight(h, h)
		if m, ok := store.AsMismatch(err); ok {
			hash, herr := st.HashAt(h)
			if errors.Is(herr, store.ErrChecksumMismatch) {
				hash, herr = st.ChainedHashAt(h)
			}
			if herr != nil && !errors.Is(herr, store.ErrChecksumMismatch) {
				return 0, false, herr
			}
			fault(Fault{Height: h, Hash: hash, What: m.What + " fails its checksum"})
			prev = nil
			continue
		}
		if err != nil {
			return 0, false, err
		}
		r := &recs[0]
		report := func(what string) { fault(Fault{Height: h, Hash: r.Hash, What: what}) }
		if r.Header.BlockHash() != r.Hash {
			report("block header does not hash to the block's hash")
		}
		if h, active, err := st.HeightOf(r.Hash); err != nil || !active || h != r.Height {
			report(fmt.Sprintf("height index of the block says %d (active %v, %v)", h, active, err))
		}
		if headers.FilterHash(r.Filter) != r.FilterHash {
			report("filter hash is not dSHA256 of the filter")
		}
		_, err = st.EachFilter(h, []chainhash.Hash{r.Hash}, func(_ int, filter []byte, sum wireframe.Checksum) (bool, error) {
			if ck.Sum(&r.Hash, filter) != sum {
				report("cfilter checksum is not that of the block's filter")
			}
			return false, nil
		})
		if err != nil {
			return 0, false, err
		}
		switch {
		case h == 0:
			if headers.FilterHeaderFromHash(r.FilterHash, chainhash.Hash{}) != r.FilterHeader {
				report("filter header does not chain onto the zero hash")
			}
		case prev != nil:
			if r.Header.PrevBlock != prev.Hash {
				report("block header does not link to the block below")
			}
			if headers.FilterHeaderFromHash(r.FilterHash, prev.FilterHeader) != r.FilterHeader {
				report("filter header does not chain onto the one below")
			}
		}
		if h == tip.Height && r.FilterHeader != tip.FilterHeader {
			report("filter header is not the tip's")
		}
		prev = r
	}
	return to, to == tip.Height, nil
}

// CheckStale reads every block of the stale set (blocks reorgs
// disconnected, which getcfilters and getcfheaders still serve by hash)
// through the store's checked reads and calls fault with each damaged
// value: a stale value failing its CRC32C (the read also tells
// store.Options.OnMismatch), a block header that does not hash to the
// block's hash, a filter hash that is not dSHA256 of the filter, a cfilter
// checksum that is not its block's, and a filter header that does not
// chain onto its parent's. It returns how many stale blocks it read.
func CheckStale(st *store.Store, fault func(Fault)) (int, error) {
	hashes, err := st.StaleHashes()
	if err != nil {
		return 0, err
	}
	var ck wireframe.CFilterHasher
	for _, hash := range hashes {
		rec, active, err := st.FilterByHash(hash)
		if m, ok := store.AsMismatch(err); ok {
			fault(Fault{Height: m.Height, Hash: hash, What: m.What + " fails its checksum", Stale: true})
			continue
		}
		if errors.Is(err, store.ErrNotFound) || active {
			continue // reconnected since the list was read
		}
		if err != nil {
			return 0, err
		}
		report := func(what string) { fault(Fault{Height: rec.Height, Hash: hash, What: what, Stale: true}) }
		if rec.Header.BlockHash() != hash {
			report("block header does not hash to the block's hash")
		}
		if headers.FilterHash(rec.Filter) != rec.FilterHash {
			report("filter hash is not dSHA256 of the filter")
		}
		_, err = st.EachFilter(rec.Height, []chainhash.Hash{hash}, func(_ int, filter []byte, sum wireframe.Checksum) (bool, error) {
			if ck.Sum(&hash, filter) != sum {
				report("cfilter checksum is not that of the block's filter")
			}
			return false, nil
		})
		if err != nil && !errors.Is(err, store.ErrChecksumMismatch) {
			return 0, err
		}
		if rec.Height == 0 {
			continue
		}
		parent, err := st.FilterHeadersForStop(rec.Header.PrevBlock, rec.Height-1)
		switch {
		case errors.Is(err, store.ErrChecksumMismatch):
			// The parent's own fault, reported where it is.
		case err != nil:
			report(fmt.Sprintf("parent %s at height %d cannot be read: %v", rec.Header.PrevBlock, rec.Height-1, err))
		case headers.FilterHeaderFromHash(rec.FilterHash, parent[0]) != rec.FilterHeader:
			report("filter header does not chain onto its parent's")
		}
	}
	return len(hashes), nil
}
