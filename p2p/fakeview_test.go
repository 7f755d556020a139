package p2p

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// fakeMaxRange mirrors store.MaxRange: no range read returns more.
const fakeMaxRange = 2000

var errFakeRange = errors.New("fake view: range too large")

// fakeBlock is one block of fakeView.
type fakeBlock struct {
	height       uint32
	hash         chainhash.Hash
	header       wire.BlockHeader
	filter       []byte
	filterHeader chainhash.Hash
	active       bool
	// checksum caches wireChecksum of the block's cfilter (set: true).
	checksum    [4]byte
	checksumSet bool
}

// wireChecksum is the checksum wire puts in the header of the cfilter
// message carrying filter for hash: the oracle for the store's.
func wireChecksum(hash *chainhash.Hash, filter []byte) [4]byte {
	var buf bytes.Buffer
	msg := wire.NewMsgCFilter(wire.GCSFilterRegular, hash, filter)
	if err := wire.WriteMessage(&buf, msg, wire.ProtocolVersion, wire.MainNet); err != nil {
		panic(err)
	}
	return [4]byte(buf.Bytes()[20:24])
}

// fakeView is an in-memory ChainView: an active chain and stale branches,
// with TipChanged closed on every commit or rollback.
type fakeView struct {
	mu      sync.Mutex
	active  []*fakeBlock
	byHash  map[chainhash.Hash]*fakeBlock
	changed chan struct{}
	rng     *rand.Rand
	// misses, when set, receives every hash HeightOf did not find.
	misses chan chainhash.Hash
	// filtersHook, when set, runs inside AppendBlockHashes before it
	// reads.
	filtersHook func()
	// eachHook, when set, runs inside EachFilter before it reads.
	eachHook func()
	// sharedFilter, when set, is every new block's filter (mainnet-size
	// filters without a copy per block).
	sharedFilter []byte
	// filtersRead counts filters EachFilter handed out.
	filtersRead atomic.Int64
	// readErr, when set, is what every filter read (EachFilter,
	// AppendFilterHashes) fails with: a store fault.
	readErr error
}

var _ ChainView = (*fakeView)(nil)

// newFakeView returns a view with blocks 0..n-1 of a synthetic chain.
func newFakeView(n int, seed uint64) *fakeView {
	return newFakeViewFilters(n, seed, 0)
}

// newFakeViewFilters is newFakeView with every filter the same filterSize
// bytes (0: small random filters of their own).
func newFakeViewFilters(n int, seed uint64, filterSize int) *fakeView {
	v := &fakeView{
		byHash:  make(map[chainhash.Hash]*fakeBlock),
		changed: make(chan struct{}),
		rng:     rand.New(rand.NewPCG(seed, 0x5eed)),
	}
	if filterSize > 0 {
		v.sharedFilter = make([]byte, filterSize)
		for i := range v.sharedFilter {
			v.sharedFilter[i] = byte(v.rng.Uint32())
		}
	}
	if n > 0 {
		v.commit(v.makeBranch(nil, n)...)
	}
	return v
}

// makeBranch builds n blocks on parent (nil: from genesis) without
// committing them.
func (v *fakeView) makeBranch(parent *fakeBlock, n int) []*fakeBlock {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]*fakeBlock, 0, n)
	for i := 0; i < n; i++ {
		b := &fakeBlock{}
		var prevFH chainhash.Hash
		if parent != nil {
			b.height = parent.height + 1
			b.header.PrevBlock = parent.hash
			prevFH = parent.filterHeader
		}
		b.header.Version = 4
		binary.LittleEndian.PutUint64(b.header.MerkleRoot[:], v.rng.Uint64())
		b.header.Timestamp = time.Unix(1_600_000_000+int64(b.height)*600, 0)
		b.header.Bits = 0x207fffff
		b.header.Nonce = v.rng.Uint32()
		b.hash = b.header.BlockHash()
		if v.sharedFilter != nil {
			b.filter = v.sharedFilter
		} else {
			b.filter = make([]byte, 1+v.rng.IntN(200))
			for j := range b.filter {
				b.filter[j] = byte(v.rng.Uint32())
			}
		}
		fh := chainhash.DoubleHashH(b.filter)
		b.filterHeader = chainhash.DoubleHashH(append(fh[:], prevFH[:]...))
		out = append(out, b)
		parent = b
	}
	return out
}

// extend builds and commits n blocks on the tip.
func (v *fakeView) extend(n int) []*fakeBlock {
	bs := v.makeBranch(v.tipBlock(), n)
	v.commit(bs...)
	return bs
}

// commit makes blocks (which must extend the tip) active and signals.
func (v *fakeView) commit(bs ...*fakeBlock) {
	v.mu.Lock()
	for _, b := range bs {
		if uint32(len(v.active)) != b.height {
			panic(fmt.Sprintf("commit height %d on %d blocks", b.height, len(v.active)))
		}
		b.active = true
		v.active = append(v.active, b)
		v.byHash[b.hash] = b
	}
	close(v.changed)
	v.changed = make(chan struct{})
	v.mu.Unlock()
}

// addStale records blocks of a stale branch (they are never active).
func (v *fakeView) addStale(bs ...*fakeBlock) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, b := range bs {
		v.byHash[b.hash] = b
	}
}

// touch signals TipChanged without changing anything.
func (v *fakeView) touch() {
	v.mu.Lock()
	close(v.changed)
	v.changed = make(chan struct{})
	v.mu.Unlock()
}

func (v *fakeView) tipBlock() *fakeBlock {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.active) == 0 {
		return nil
	}
	return v.active[len(v.active)-1]
}

func (v *fakeView) at(h uint32) *fakeBlock {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.active[h]
}

func (v *fakeView) Tip() (Tip, bool) {
	b := v.tipBlock()
	if b == nil {
		return Tip{}, false
	}
	return Tip{Height: b.height, Hash: b.hash}, true
}

func (v *fakeView) TipChanged() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changed
}

func (v *fakeView) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	v.mu.Lock()
	b, ok := v.byHash[hash]
	misses := v.misses
	v.mu.Unlock()
	if !ok {
		if misses != nil {
			select {
			case misses <- hash:
			default:
			}
		}
		return 0, false, ErrNotFound
	}
	return b.height, b.active, nil
}

func (v *fakeView) HeaderByHash(hash chainhash.Hash) (wire.BlockHeader, uint32, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	b, ok := v.byHash[hash]
	if !ok {
		return wire.BlockHeader{}, 0, ErrNotFound
	}
	return b.header, b.height, nil
}

func (v *fakeView) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if start > end || int(end) >= len(v.active) {
		return nil, ErrNotFound
	}
	if end-start >= fakeMaxRange {
		return nil, errFakeRange
	}
	out := make([]wire.BlockHeader, 0, end-start+1)
	for h := start; h <= end; h++ {
		out = append(out, v.active[h].header)
	}
	return out, nil
}

// chainTo returns the blocks start..height(stop) on the chain ending at stop.
func (v *fakeView) chainTo(stop chainhash.Hash, start uint32) ([]*fakeBlock, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	b, ok := v.byHash[stop]
	if !ok || start > b.height {
		return nil, ErrNotFound
	}
	if b.height-start >= fakeMaxRange {
		return nil, errFakeRange
	}
	out := make([]*fakeBlock, b.height-start+1)
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = b
		if b.active {
			// The rest is the active chain: index it directly.
			for j := i - 1; j >= 0; j-- {
				out[j] = v.active[start+uint32(j)]
			}
			break
		}
		b = v.byHash[b.header.PrevBlock]
	}
	return out, nil
}

func (v *fakeView) AppendBlockHashes(dst []chainhash.Hash, stop chainhash.Hash, start uint32) ([]chainhash.Hash, error) {
	if v.filtersHook != nil {
		v.filtersHook()
	}
	bs, err := v.chainTo(stop, start)
	if err != nil {
		return dst, err
	}
	for _, b := range bs {
		dst = append(dst, b.hash)
	}
	return dst, nil
}

// EachFilter looks each block up by hash, as the store does (active or
// stale, whatever happened since the hashes were read).
func (v *fakeView) EachFilter(start uint32, hashes []chainhash.Hash, fn func(i int, filter []byte, checksum [4]byte) (bool, error)) (int, error) {
	if v.eachHook != nil {
		v.eachHook()
	}
	if v.readErr != nil {
		return 0, v.readErr
	}
	for i, h := range hashes {
		v.mu.Lock()
		b, ok := v.byHash[h]
		if ok && !b.checksumSet {
			b.checksum, b.checksumSet = wireChecksum(&b.hash, b.filter), true
		}
		v.mu.Unlock()
		if !ok || b.height != start+uint32(i) {
			return i, fmt.Errorf("filter of %s at %d: %w", h, start+uint32(i), ErrNotFound)
		}
		v.filtersRead.Add(1)
		more, err := fn(i, b.filter, b.checksum)
		if err != nil || !more {
			return i + 1, err
		}
	}
	return len(hashes), nil
}

func (v *fakeView) AppendFilterHashes(dst []byte, stop chainhash.Hash, start uint32) (chainhash.Hash, []byte, error) {
	if v.readErr != nil {
		return chainhash.Hash{}, dst, v.readErr
	}
	bs, err := v.chainTo(stop, start)
	if err != nil {
		return chainhash.Hash{}, dst, err
	}
	var prev chainhash.Hash
	if start > 0 {
		v.mu.Lock()
		prev = v.byHash[bs[0].header.PrevBlock].filterHeader
		v.mu.Unlock()
	}
	for _, b := range bs {
		// Hashed here, not kept: tests build fakeBlocks from btcd's data.
		h := chainhash.DoubleHashH(b.filter)
		dst = append(dst, h[:]...)
	}
	return prev, dst, nil
}

// FilterHeaderCheckpoints walks from stop back to genesis by PrevBlock.
func (v *fakeView) FilterHeaderCheckpoints(stop chainhash.Hash, interval uint32) ([]chainhash.Hash, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	b, ok := v.byHash[stop]
	if !ok {
		return nil, ErrNotFound
	}
	out := make([]chainhash.Hash, b.height/interval)
	for ; b.height > 0; b = v.byHash[b.header.PrevBlock] {
		if b.height%interval == 0 {
			out[b.height/interval-1] = b.filterHeader
		}
	}
	return out, nil
}
