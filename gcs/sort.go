package gcs

import (
	"bytes"
	"cmp"
	"math/bits"
	"slices"
)

// hashRec is one element's full 64-bit hash and its index in the caller's
// element list; sorting these gives sorted range values (HashToRange is
// monotone in the hash) and puts equal elements next to each other.
type hashRec struct {
	h   uint64
	idx uint32
}

// insertionSortMax is the length up to which sorter uses a plain insertion
// sort on the hash (no compare-function calls). Above it the bucket pass
// is cheaper; on uniform hashes the two cost about the same at this
// length.
const insertionSortMax = 16

// bucketSortMin is the length below which sortHashes uses slices.Sort on
// bare hashes instead of building records for sorter.
const bucketSortMin = 256

// maxBucketBits bounds the bucket table of sorter (2^16 counters).
const maxBucketBits = 16

// bucketInsertionMax is the largest bucket sorter finishes with an
// insertion sort; larger ones (skewed or adversarial hashes) get
// slices.SortFunc so the worst case stays O(n log n).
const bucketInsertionMax = 16

// sorter sorts hash records with one bucket pass: hashes are uniform, so
// distributing n records over between n and 2n buckets by their top bits
// leaves buckets of a record or two, which an insertion sort finishes.
// Buckets that turn out large (skewed or adversarial hashes) are sorted
// with a comparison sort, so the worst case stays O(n log n). Its buffers
// are reused across calls.
type sorter struct {
	counts []uint32
	tmp    []hashRec
}

// sort sorts recs by hash and returns the sorted records, which live either
// in recs or in the sorter's scratch buffer; the other buffer is handed
// back to the sorter for the next call.
func (s *sorter) sort(recs []hashRec) []hashRec {
	n := len(recs)
	if n <= insertionSortMax {
		insertionSort(recs)
		return recs
	}
	return s.bucketSort(recs)
}

// bucketSort is sort for more than insertionSortMax records.
func (s *sorter) bucketSort(recs []hashRec) []hashRec {
	n := len(recs)
	k := min(bits.Len(uint(n)), maxBucketBits)
	shift := uint(64 - k)
	nb := 1 << k
	if cap(s.counts) < nb {
		s.counts = make([]uint32, nb)
	}
	counts := s.counts[:nb]
	clear(counts)
	for _, r := range recs {
		counts[r.h>>shift]++
	}
	var sum, largest uint32
	for i, c := range counts {
		counts[i] = sum
		sum += c
		largest = max(largest, c)
	}
	if cap(s.tmp) < n {
		s.tmp = make([]hashRec, n, n+n/4)
	}
	out := s.tmp[:n]
	for _, r := range recs {
		d := r.h >> shift
		out[counts[d]] = r
		counts[d]++
	}
	if largest <= bucketInsertionMax {
		// Every record is at most a bucket away from its place: one
		// insertion sort over the whole output finishes in O(n·largest)
		// without a branch per bucket.
		insertionSort(out)
	} else {
		// counts[d] is now the end of bucket d.
		var lo uint32
		for _, hi := range counts {
			switch size := hi - lo; {
			case size < 2:
			case size <= bucketInsertionMax:
				insertionSort(out[lo:hi])
			default:
				slices.SortFunc(out[lo:hi], cmpRec)
			}
			lo = hi
		}
	}
	s.tmp = recs[:0]
	return out
}

// insertionSort sorts rs by hash; it is stable and meant for short rs.
func insertionSort(rs []hashRec) {
	for i := 1; i < len(rs); i++ {
		r := rs[i]
		j := i
		for j > 0 && rs[j-1].h > r.h {
			rs[j] = rs[j-1]
			j--
		}
		rs[j] = r
	}
}

func cmpRec(a, b hashRec) int { return cmp.Compare(a.h, b.h) }

// dedupSorted removes records of repeated elements from recs (sorted by
// hash) in place and returns the shortened slice: one record per distinct
// element. Equal elements have equal hashes, so only runs of equal hashes
// need their bytes compared; distinct elements whose 64-bit hashes collide
// are all kept. elem returns the bytes of the element with the given index.
func dedupSorted(recs []hashRec, elem func(idx uint32) []byte) []hashRec {
	// Fast path: most blocks repeat few elements, so find the first run
	// before copying anything.
	dup := 1
	for dup < len(recs) && recs[dup].h != recs[dup-1].h {
		dup++
	}
	if dup >= len(recs) {
		return recs
	}
	out := recs[:dup-1]
	for i := dup - 1; i < len(recs); {
		h := recs[i].h
		j := i + 1
		for j < len(recs) && recs[j].h == h {
			j++
		}
		if j-i == 1 {
			out = append(out, recs[i])
			i = j
			continue
		}
		run := recs[i:j]
		first := elem(run[0].idx)
		same := true
		for _, r := range run[1:] {
			if !bytes.Equal(elem(r.idx), first) {
				same = false
				break
			}
		}
		if same {
			out = append(out, run[0])
			i = j
			continue
		}
		// A genuine 64-bit collision between different elements: sort
		// the run by bytes and keep one record per distinct element.
		slices.SortFunc(run, func(a, b hashRec) int {
			return bytes.Compare(elem(a.idx), elem(b.idx))
		})
		out = append(out, run[0])
		for k := 1; k < len(run); k++ {
			if !bytes.Equal(elem(run[k].idx), elem(run[k-1].idx)) {
				out = append(out, run[k])
			}
		}
		i = j
	}
	return out
}

// sortHashes sorts full 64-bit hashes (uniform, as sorter expects).
func sortHashes(hs []uint64) {
	if len(hs) < bucketSortMin {
		slices.Sort(hs)
		return
	}
	recs := make([]hashRec, len(hs))
	for i, h := range hs {
		recs[i].h = h
	}
	var s sorter
	recs = s.sort(recs)
	for i := range recs {
		hs[i] = recs[i].h
	}
}
