package rangefile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// fakeChain is a chain of n heights made up as it is read: header h links
// to h-1 where a range starts (all a range or an import file checks);
// tag tells two branches apart. It is a Reader; read is its ReadFunc
// (under mu, so a test can change it between two reads).
type fakeChain struct {
	mu  sync.Mutex
	n   uint32
	tag byte
}

func (c *fakeChain) header(h uint32) wire.BlockHeader {
	hdr := wire.BlockHeader{Version: 1, Timestamp: time.Unix(1e9+int64(h), 0), Nonce: h}
	binary.LittleEndian.PutUint32(hdr.MerkleRoot[:], h)
	hdr.MerkleRoot[31] = c.tag
	if h > 0 && h%Size == 0 {
		prev := c.header(h - 1)
		hdr.PrevBlock = prev.BlockHash()
	}
	return hdr
}

func (c *fakeChain) read(fn func(Reader) error) error {
	c.mu.Lock()
	snap := fakeChain{n: c.n, tag: c.tag}
	c.mu.Unlock()
	return fn(&snap)
}

func (c *fakeChain) set(n uint32, tag byte) {
	c.mu.Lock()
	c.n, c.tag = n, tag
	c.mu.Unlock()
}

func (c *fakeChain) HashAt(h uint32) (chainhash.Hash, error) {
	if h >= c.n {
		return chainhash.Hash{}, ErrShortRead
	}
	hdr := c.header(h)
	return hdr.BlockHash(), nil
}

func (c *fakeChain) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	var out []wire.BlockHeader
	for h := start; h <= end && h < c.n; h++ {
		out = append(out, c.header(h))
	}
	return out, nil
}

func (c *fakeChain) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	var out []chainhash.Hash
	for h := start; h <= end && h < c.n; h++ {
		fh := chainhash.Hash(sha256.Sum256([]byte{byte(h), byte(h >> 8), byte(h >> 16), c.tag}))
		out = append(out, fh)
	}
	return out, nil
}

func (c *fakeChain) Filters(start, end uint32) ([][]byte, error) {
	var out [][]byte
	for h := start; h <= end && h < c.n; h++ {
		out = append(out, []byte{byte(h), c.tag})
	}
	return out, nil
}

var testNetwork = Network{Name: "regtest", Net: wire.TestNet, Genesis: chainhash.Hash{1}}

// TestImportStream: the stream is the bytes WriteImport writes from one
// state, read a run per state; told the wrong SHA-256 it fails instead of
// returning the last bytes; a state whose block at the end differs fails
// it with ErrChainChanged.
func TestImportStream(t *testing.T) {
	c := &fakeChain{n: 6010}
	for _, filters := range []bool{false, true} {
		var want bytes.Buffer
		if err := WriteImport(&want, c, wire.TestNet, filters, 5999); err != nil {
			t.Fatal(err)
		}
		endHash, _ := c.HashAt(5999)
		s := NewImportStream(c.read, wire.TestNet, filters, 5999, endHash)
		got, err := io.ReadAll(s)
		if err != nil || !bytes.Equal(got, want.Bytes()) || int64(len(got)) != s.Size() {
			t.Fatalf("filters %v: %d bytes (%v), want %d", filters, len(got), err, want.Len())
		}
		s = NewImportStream(c.read, wire.TestNet, filters, 5999, endHash)
		s.Verify([32]byte{1})
		got, err = io.ReadAll(s)
		if !errors.Is(err, ErrImportChanged) || len(got) >= want.Len()-FilterHeaderSize {
			t.Errorf("filters %v, wrong sum: %d bytes, %v", filters, len(got), err)
		}
		if n, err := s.Read(make([]byte, 10)); n != 0 || !errors.Is(err, ErrImportChanged) {
			t.Errorf("filters %v, wrong sum: a Read after the error: %d bytes, %v", filters, n, err)
		}
		s = NewImportStream(c.read, wire.TestNet, filters, 5999, endHash)
		s.Verify(sha256.Sum256(want.Bytes()))
		if _, err := io.ReadAll(s); err != nil {
			t.Errorf("filters %v, right sum: %v", filters, err)
		}
	}
	endHash, _ := c.HashAt(5999)
	other := &fakeChain{n: 6010, tag: 1}
	if _, err := io.ReadAll(NewImportStream(other.read, wire.TestNet, false, 5999, endHash)); !errors.Is(err, ErrChainChanged) {
		t.Errorf("another branch: %v", err)
	}
}

// TestCatalogExtendsImports: when the newest final range moves, the
// catalog hashes only the import files' new heights (one run each), and
// its documents are those of a catalog that hashed everything afresh;
// after a deep reorg it hashes everything again.
func TestCatalogExtendsImports(t *testing.T) {
	c := &fakeChain{n: 6010}
	cat := NewCatalog(testNetwork)
	if _, _, err := cat.Documents(c.read, nil, 6009, 6, true); err != nil {
		t.Fatal(err)
	}
	if st := cat.Stats(); st.RangesHashed != 3 || st.ImportRunsHashed != 6 {
		t.Fatalf("first call: %+v", st)
	}
	c.set(8010, 0)
	m, l, err := cat.Documents(c.read, nil, 8009, 6, true)
	if err != nil {
		t.Fatal(err)
	}
	if st := cat.Stats(); st.RangesHashed != 4 || st.ImportRunsHashed != 8 {
		t.Errorf("after one more range: %+v, want 4 ranges and 8 runs", st)
	}
	fm, fl, err := NewCatalog(testNetwork).Documents(c.read, nil, 8009, 6, true)
	if err != nil || !bytes.Equal(m, fm) || !bytes.Equal(l, fl) {
		t.Errorf("extended documents differ from fresh ones (%v)", err)
	}
	c.set(8010, 1)
	m, _, err = cat.Documents(c.read, nil, 8009, 6, true)
	fm, _, ferr := NewCatalog(testNetwork).Documents(c.read, nil, 8009, 6, true)
	if err != nil || ferr != nil || !bytes.Equal(m, fm) {
		t.Errorf("after a deep reorg: documents differ from fresh ones (%v %v)", err, ferr)
	}
	if st := cat.Stats(); st.RangesHashed != 8 || st.ImportRunsHashed != 16 {
		t.Errorf("after a deep reorg: %+v, want every range and run hashed again", st)
	}
}

// TestCatalogWarm: while a warmer is mid-way, Documents without waiting
// returns ErrWarming; once Warm returns, Documents hashes nothing; a
// cancelled Warm returns at once.
func TestCatalogWarm(t *testing.T) {
	c := &fakeChain{n: 20_010}
	cat := NewCatalog(testNetwork)
	cat.SetWarmer(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cat.Warm(ctx, c.read, nil, 20_009, 6, time.Hour) }()
	for cat.Stats().RangesHashed == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, _, err := cat.Documents(c.read, nil, 20_009, 6, false); !errors.Is(err, ErrWarming) {
		t.Errorf("mid-warm: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled warm: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled warm did not return")
	}
	if err := cat.Warm(context.Background(), c.read, nil, 20_009, 6, 0); err != nil {
		t.Fatal(err)
	}
	before := cat.Stats()
	if before.RangesHashed != 10 {
		t.Errorf("warm hashed %d ranges, want 10 (each once)", before.RangesHashed)
	}
	m, _, err := cat.Documents(c.read, nil, 20_009, 6, false)
	if err != nil {
		t.Fatal(err)
	}
	if after := cat.Stats(); after != before {
		t.Errorf("documents after warm hashed: %+v, then %+v", before, after)
	}
	fm, _, err := NewCatalog(testNetwork).Documents(c.read, nil, 20_009, 6, true)
	if err != nil || !bytes.Equal(m, fm) {
		t.Errorf("warm documents differ from fresh ones (%v)", err)
	}
	// One more final range: inline, a range and a run of each import.
	c.set(22_010, 0)
	if _, _, err := cat.Documents(c.read, nil, 22_009, 6, false); err != nil {
		t.Fatal(err)
	}
	if after := cat.Stats(); after.RangesHashed != 11 || after.ImportRunsHashed != before.ImportRunsHashed+2 {
		t.Errorf("one more range: %+v", after)
	}
}

// fakeTweaks is a silent-payment index of c covering first..next-1,
// every block without tweaks.
type fakeTweaks struct {
	c           *fakeChain
	first, next uint32
}

func (f *fakeTweaks) Covered() (uint32, uint32) { return f.first, f.next }

func (f *fakeTweaks) BlockTweaks(start, end uint32) ([]BlockTweaks, error) {
	var out []BlockTweaks
	for h := start; h <= end; h++ {
		hash, err := f.c.HashAt(h)
		if err != nil {
			return nil, err
		}
		out = append(out, BlockTweaks{Hash: hash})
	}
	return out, nil
}

// TestCatalogWarmRefreshesTweakCoverage: when the silent-payment index
// reaches cataloged ranges, the warmer hashes them again (with their
// tweak objects), so that requests do not.
func TestCatalogWarmRefreshesTweakCoverage(t *testing.T) {
	c := &fakeChain{n: 6010}
	sp := &fakeTweaks{c: c}
	cat := NewCatalog(testNetwork)
	cat.SetWarmer(true)
	if err := cat.Warm(context.Background(), c.read, sp, 6009, 6, 0); err != nil {
		t.Fatal(err)
	}
	sp.first, sp.next = 0, 4000 // the index now covers ranges 0 and 2000
	if err := cat.Warm(context.Background(), c.read, sp, 6009, 6, 0); err != nil {
		t.Fatal(err)
	}
	before := cat.Stats()
	if before.RangesHashed != 5 {
		t.Errorf("%d ranges hashed, want 3 then the 2 the index reached", before.RangesHashed)
	}
	m, _, err := cat.Documents(c.read, sp, 6009, 6, false)
	if err != nil {
		t.Fatal(err)
	}
	if after := cat.Stats(); after != before {
		t.Errorf("documents hashed after the warm: %+v, then %+v", before, after)
	}
	fm, _, err := NewCatalog(testNetwork).Documents(c.read, sp, 6009, 6, true)
	if err != nil || !bytes.Equal(m, fm) || !bytes.Contains(m, []byte(TweaksName(600, 2000))) {
		t.Errorf("documents with tweaks differ from fresh ones (%v)", err)
	}
}
