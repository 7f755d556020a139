package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/wireframe"
)

// TestRESTNeverFailsWhileBlocksCommit polls every REST and bulk route for
// the blocks around the tip of a real store (fsync on, so each commit
// leaves the new state visible in bbolt for a while before the store
// publishes its tip) while a writer commits blocks one by one, rolls back
// and recommits them, as the indexer does. No answer may be a 5xx, and
// every 200 must be the right bytes for the block asked about: each
// request is answered from one committed state. Core answers a block it
// does not have on its active chain with an empty list (blockfilterheaders,
// headers) or 404 (blockfilter, blockhashbyheight), and so does cfindexd
// for a block that is not (or not yet, or no longer) committed.
func TestRESTNeverFailsWhileBlocksCommit(t *testing.T) {
	const (
		top     = filtersChunk - 4 // the writer stops here (one chunk per bulk file)
		base    = top - 40         // blocks committed before the polling starts
		pollers = 4
	)
	chain := synthChain(t, top, 21)
	st, err := store.Open(filepath.Join(t.TempDir(), "filters.db"), *chaincfg.RegressionNetParams.GenesisHash, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CommitBatch(storeRecords(chain[:base+1])); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newTestServer(t, newStoreView(st), Config{Net: chaincfg.RegressionNetParams.Net, MaxBulkPerAddr: DefaultMaxBulkInFlight}).Handler())
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	var (
		writerErr error
		done      = make(chan struct{})
	)
	go func() {
		defer close(done)
		writerErr = commitAndRollBack(ctx, st, chain, base)
	}()

	var (
		wg                 sync.WaitGroup
		requests, answered atomic.Int64
		failMu             sync.Mutex
		failures           []string
	)
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	for p := range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 99))
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				default:
				}
				tip, _ := st.Tip()
				h := min(int(tip.Height)-3+rng.IntN(7), top)
				ok, err := pollOnce(ctx, srv.Client(), srv.URL, chain, h, rng.IntN(8))
				requests.Add(1)
				if err != nil {
					fail("%v", err)
					continue
				}
				if ok {
					answered.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	<-done
	if writerErr != nil {
		t.Fatalf("writer: %v", writerErr)
	}
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d requests while %d blocks were committed, rolled back and recommitted; %d answered with data", requests.Load(), top-base, answered.Load())
	if answered.Load() == 0 {
		t.Fatal("no request was answered with data")
	}
}

// commitAndRollBack commits chain[base+1:] one block at a time; after
// every fifth block it rolls the top three back (the tip goes down, as
// when the node invalidates blocks) and recommits them. It returns when
// the last block is committed.
func commitAndRollBack(ctx context.Context, st *store.Store, chain []BlockRecord, base int) error {
	for h := base + 1; h < len(chain); h++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := st.CommitBatch(storeRecords(chain[h : h+1])); err != nil {
			return err
		}
		if h%5 != 0 {
			continue
		}
		if _, err := st.Rollback(uint32(h - 3)); err != nil {
			return err
		}
		for r := h - 2; r <= h; r++ {
			if err := st.CommitBatch(storeRecords(chain[r : r+1])); err != nil {
				return err
			}
		}
	}
	return nil
}

// pollOnce sends request kind (0..7) about height h of chain and checks
// the answer: never a 5xx, and a 200 carries exactly the block's data. ok
// reports a 200 with data.
func pollOnce(ctx context.Context, c *http.Client, base string, chain []BlockRecord, h, kind int) (ok bool, err error) {
	rec := chain[h]
	hash := rec.Hash.String()
	var url string
	switch kind {
	case 0:
		url = "/rest/blockfilterheaders/basic/" + hash + ".bin?count=1"
	case 1:
		url = "/rest/blockfilterheaders/basic/" + hash + ".bin?count=5"
	case 2:
		url = "/rest/blockfilter/basic/" + hash + ".bin"
	case 3:
		url = "/rest/headers/" + hash + ".bin?count=3"
	case 4:
		url = fmt.Sprintf("/rest/blockhashbyheight/%d.bin", h)
	case 5:
		url = fmt.Sprintf("/bulk/filterheaders/0-%d.bin", h)
	case 6:
		url = "/bulk/filters/0.bin"
	case 7:
		url = "/bulk/neutrino/blockheaders.bin"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+url, nil)
	if err != nil {
		return false, err
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, fmt.Errorf("%s: status %d, body cut off: %w", url, resp.StatusCode, err)
	}
	if resp.StatusCode >= 500 {
		return false, fmt.Errorf("%s: %d %q", url, resp.StatusCode, b)
	}
	if resp.StatusCode == http.StatusNotFound {
		if kind == 2 || kind == 4 || kind == 5 {
			return false, nil // not committed (yet, or any more)
		}
		return false, fmt.Errorf("%s: 404 %q", url, b)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s: %d %q", url, resp.StatusCode, b)
	}
	if len(b) == 0 {
		return false, nil // Core's empty list for a block off the active chain
	}
	switch kind {
	case 0, 1:
		if len(b)%32 != 0 || !bytes.Equal(b[:32], rec.FilterHeader[:]) {
			return false, fmt.Errorf("%s: %d bytes, want filter header %s first", url, len(b), rec.FilterHeader)
		}
	case 2:
		prefix := make([]byte, wireframe.CFilterPrefixLen(len(rec.Filter)))
		wireframe.PutCFilterPrefix(prefix, &rec.Hash, len(rec.Filter))
		if !bytes.Equal(b, append(prefix, rec.Filter...)) {
			return false, fmt.Errorf("%s: wrong filter", url)
		}
	case 3:
		var hdr wire.BlockHeader
		if len(b)%blockHeaderSize != 0 || hdr.Deserialize(bytes.NewReader(b)) != nil || hdr.BlockHash() != rec.Hash {
			return false, fmt.Errorf("%s: %d bytes, not starting with the block's header", url, len(b))
		}
	case 4:
		if !bytes.Equal(b, rec.Hash[:]) {
			return false, fmt.Errorf("%s: hash %x", url, b)
		}
	case 5:
		if len(b) != 32*(h+1) || !bytes.Equal(b[len(b)-32:], rec.FilterHeader[:]) {
			return false, fmt.Errorf("%s: %d bytes, want %d ending with %s", url, len(b), 32*(h+1), rec.FilterHeader)
		}
	case 6:
		if err := checkFiltersFile(b, chain); err != nil {
			return false, fmt.Errorf("%s: %w", url, err)
		}
	case 7:
		n := (len(b) - NeutrinoMetadataSize) / blockHeaderSize
		if (len(b)-NeutrinoMetadataSize)%blockHeaderSize != 0 || n == 0 || n > len(chain) {
			return false, fmt.Errorf("%s: %d bytes", url, len(b))
		}
		var hdr wire.BlockHeader
		if err := hdr.Deserialize(bytes.NewReader(b[len(b)-blockHeaderSize:])); err != nil || hdr.BlockHash() != chain[n-1].Hash {
			return false, fmt.Errorf("%s: last of %d headers is not block %d", url, n, n-1)
		}
	}
	return true, nil
}

// checkFiltersFile checks that a filters file holds the filters of chain
// from height 0, in order, and nothing else.
func checkFiltersFile(b []byte, chain []BlockRecord) error {
	for h := 0; len(b) > 0; h++ {
		n, sz, err := wirescan.ReadCompactSize(b)
		if err != nil || uint64(len(b)-sz) < n || h >= len(chain) {
			return fmt.Errorf("record %d malformed", h)
		}
		if !bytes.Equal(b[sz:sz+int(n)], chain[h].Filter) {
			return fmt.Errorf("filter %d differs", h)
		}
		b = b[sz+int(n):]
	}
	return nil
}
