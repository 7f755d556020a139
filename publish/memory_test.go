package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/objstore"
	"github.com/cfindexd/cfindexd/rangefile"
)

// synthChain is a chain of n heights made up as it is read, holding
// nothing per height: header h links to header h-1 only where a range
// starts (which is all a range, an import file or the publisher checks),
// so any header is computed from at most two. Filters are one byte.
type synthChain struct {
	n   uint32
	tag byte // a different tag is a different chain
}

func (c *synthChain) header(h uint32) wire.BlockHeader {
	hdr := wire.BlockHeader{Version: 1, Timestamp: time.Unix(1e9+int64(h), 0), Nonce: h, Bits: uint32(c.tag)}
	binary.LittleEndian.PutUint32(hdr.MerkleRoot[:], h)
	hdr.MerkleRoot[31] = c.tag
	if h > 0 && h%rangefile.Size == 0 {
		prev := c.header(h - 1)
		hdr.PrevBlock = prev.BlockHash()
	}
	return hdr
}

func (c *synthChain) TipHeight() (uint32, bool)   { return c.n - 1, c.n > 0 }
func (c *synthChain) TipChanged() <-chan struct{} { return nil }
func (c *synthChain) Read(fn func(rangefile.Reader) error) error {
	return fn(c)
}
func (c *synthChain) check(start, end uint32) error {
	if end < start || end >= c.n {
		return errMissing
	}
	return nil
}
func (c *synthChain) HashAt(h uint32) (chainhash.Hash, error) {
	if err := c.check(h, h); err != nil {
		return chainhash.Hash{}, err
	}
	hdr := c.header(h)
	return hdr.BlockHash(), nil
}
func (c *synthChain) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	if err := c.check(start, end); err != nil {
		return nil, err
	}
	out := make([]wire.BlockHeader, 0, end-start+1)
	for h := start; h <= end; h++ {
		out = append(out, c.header(h))
	}
	return out, nil
}
func (c *synthChain) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	if err := c.check(start, end); err != nil {
		return nil, err
	}
	out := make([]chainhash.Hash, 0, end-start+1)
	for h := start; h <= end; h++ {
		var fh chainhash.Hash
		binary.LittleEndian.PutUint32(fh[:], h)
		fh[31] = c.tag
		out = append(out, fh)
	}
	return out, nil
}
func (c *synthChain) Filters(start, end uint32) ([][]byte, error) {
	if err := c.check(start, end); err != nil {
		return nil, err
	}
	out := make([][]byte, 0, end-start+1)
	for h := start; h <= end; h++ {
		out = append(out, []byte{byte(h)})
	}
	return out, nil
}

// heapBucket is a bucket in memory that keeps only each object's SHA-256
// and samples the live heap (after a collection) while objects are
// written: every Put, and every MiB a PutStream reads. It reads streams
// in 1 MiB parts, as minio-go reads PartSize ones (objstore's own test
// measures those).
type heapBucket struct {
	mu       sync.Mutex
	sums     map[string]string
	sizes    map[string]int64
	peak     uint64
	streamed int
	// beforeStream, when set, runs before a stream is read.
	beforeStream func()
}

func newHeapBucket() *heapBucket {
	return &heapBucket{sums: map[string]string{}, sizes: map[string]int64{}}
}

func (b *heapBucket) sample() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.peak = max(b.peak, ms.HeapAlloc)
}

func (b *heapBucket) Put(_ context.Context, name string, data []byte, sum [32]byte, _, _ string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sha256.Sum256(data) != sum {
		return fmt.Errorf("put %s: checksum mismatch", name)
	}
	b.sample()
	b.sums[name], b.sizes[name] = hex.EncodeToString(sum[:]), int64(len(data))
	return nil
}

func (b *heapBucket) PutStream(_ context.Context, name string, r io.Reader, size int64, sum [32]byte, _, _ string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.beforeStream != nil {
		b.beforeStream()
	}
	h := sha256.New()
	part := make([]byte, 1<<20)
	var n int64
	for {
		k, err := io.ReadFull(r, part)
		h.Write(part[:k])
		n += int64(k)
		b.sample()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("put %s: %w", name, err) // aborted: nothing written
		}
	}
	var got [32]byte
	h.Sum(got[:0])
	if n != size || got != sum {
		return fmt.Errorf("put %s: %d bytes of sha256 %x, want %d of %x", name, n, got, size, sum)
	}
	b.streamed++
	b.sums[name], b.sizes[name] = hex.EncodeToString(sum[:]), size
	return nil
}

func (b *heapBucket) Stat(_ context.Context, name string) (objstore.Info, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.sums[name]
	return objstore.Info{SHA256: s, Size: b.sizes[name]}, ok, nil
}

func (b *heapBucket) Get(context.Context, string, int64) ([]byte, error) {
	return nil, objstore.ErrNotFound // the tests start from an empty bucket
}

// publishPeak publishes a synthetic chain of n heights into an empty
// bucket and returns the bucket and the peak live heap above what was live
// before.
func publishPeak(t *testing.T, n uint32) (*heapBucket, uint64) {
	t.Helper()
	c := &synthChain{n: n}
	g := c.header(0)
	net := rangefile.Network{Name: "regtest", Net: wire.TestNet, Genesis: g.BlockHash()}
	b := newHeapBucket()
	p := New(Config{Network: net, ReorgSafetyDepth: 6, ManifestEvery: time.Hour}, c, b, &countObs{}, zerolog.Nop())
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if err := p.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b.peak < ms.HeapAlloc {
		return b, 0
	}
	return b, b.peak - ms.HeapAlloc
}

// TestPublishMemoryBounded: publishing a chain of 200,000 heights (import
// files of 16 MB and 6.4 MB) holds no more live heap than publishing one
// of 20,000: the import files are streamed, never held, and the peak is a
// fixed amount (a range and one run of the stream) whatever the chain's
// length. The streamed files are the bytes rangefile.BuildImport returns.
func TestPublishMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 100 ranges")
	}
	small, smallPeak := publishPeak(t, 20_010)
	big, bigPeak := publishPeak(t, 200_010)
	t.Logf("peak live heap above the start: %d KiB for 20,000 heights, %d KiB for 200,000", smallPeak>>10, bigPeak>>10)
	const fixed = 4 << 20
	if bigPeak > fixed {
		t.Errorf("publishing 200,000 heights: %d bytes live at the peak, want at most %d", bigPeak, fixed)
	}
	if bigPeak > smallPeak+(1<<20) {
		t.Errorf("the peak grows with the chain: %d bytes for 20,000 heights, %d for 200,000", smallPeak, bigPeak)
	}
	if big.streamed != 2 || big.sizes[rangefile.HeadersImportName] != 10+80*200_000 {
		t.Errorf("%d import files streamed, headers import of %d bytes", big.streamed, big.sizes[rangefile.HeadersImportName])
	}
	c := &synthChain{n: 20_010}
	for _, filters := range []bool{false, true} {
		var want rangefile.Object
		if err := c.Read(func(r rangefile.Reader) (err error) {
			want, err = rangefile.BuildImport(r, wire.TestNet, filters, 19_999)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if small.sums[want.Name] != hex.EncodeToString(want.SHA256[:]) {
			t.Errorf("%s: streamed sha256 %s, BuildImport's %x", want.Name, small.sums[want.Name], want.SHA256)
		}
	}
}

// movingChain is a synthChain whose tip or branch the test changes
// between the publisher's two passes.
type movingChain struct {
	mu sync.Mutex
	c  synthChain
}

func (m *movingChain) TipHeight() (uint32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c.TipHeight()
}
func (m *movingChain) TipChanged() <-chan struct{} { return nil }
func (m *movingChain) Read(fn func(rangefile.Reader) error) error {
	m.mu.Lock()
	c := m.c
	m.mu.Unlock()
	return fn(&c)
}

// TestPublishImportBetweenPasses: when the tip moves between the pass
// that hashes an import file and the one that uploads it, the upload
// streams the same bytes (the file ends at the published range); when the
// chain below that range changes (a reorg deeper than the safety depth),
// the upload fails, the object is not written, and the round stops with
// ErrConflict.
func TestPublishImportBetweenPasses(t *testing.T) {
	m := &movingChain{c: synthChain{n: 6010}}
	g := m.c.header(0)
	net := rangefile.Network{Name: "regtest", Net: wire.TestNet, Genesis: g.BlockHash()}
	b := newHeapBucket()
	b.beforeStream = func() {
		m.mu.Lock()
		m.c.n += 3000 // the tip moves on by more than a range
		m.mu.Unlock()
	}
	p := New(Config{Network: net, ReorgSafetyDepth: 6}, m, b, &countObs{}, zerolog.Nop())
	if err := p.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := rangefile.WriteImport(&want, &synthChain{n: 6010}, wire.TestNet, false, 5999); err != nil {
		t.Fatal(err)
	}
	if s := sha256.Sum256(want.Bytes()); b.sums[rangefile.HeadersImportName] != hex.EncodeToString(s[:]) {
		t.Errorf("headers import after the tip moved: sha256 %s, want %x", b.sums[rangefile.HeadersImportName], s)
	}

	// A reorg below the published range's end between the passes.
	m2 := &movingChain{c: synthChain{n: 6010}}
	b2 := newHeapBucket()
	b2.beforeStream = func() {
		m2.mu.Lock()
		m2.c.tag = 1
		m2.mu.Unlock()
	}
	err := New(Config{Network: net, ReorgSafetyDepth: 6}, m2, b2, &countObs{}, zerolog.Nop()).Round(context.Background())
	if !errors.Is(err, ErrConflict) || !errors.Is(err, rangefile.ErrChainChanged) {
		t.Fatalf("round across a deep reorg: %v", err)
	}
	if _, ok := b2.sums[rangefile.HeadersImportName]; ok {
		t.Error("an import file was written from another chain")
	}
	if _, ok := b2.sums[rangefile.ManifestName]; ok {
		t.Error("a manifest was written")
	}
}
