package indexer

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/bitcoind"
	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/store"
)

// recordedFilter is Core's getblockfilter answer for one block.
type recordedFilter struct {
	Filter string `json:"filter"`
	Header string `json:"header"`
}

func (r recordedFilter) decode(t *testing.T) ([]byte, chainhash.Hash) {
	t.Helper()
	f, err := hex.DecodeString(r.Filter)
	if err != nil {
		t.Fatal(err)
	}
	h, err := chainhash.NewHashFromStr(r.Header)
	if err != nil {
		t.Fatal(err)
	}
	return f, *h
}

// recordedPrefix loads heights 0..94 of the recorded chain: only hashes and
// getblockfilter answers were recorded for them, not the blocks.
func recordedPrefix(t *testing.T, fx *corefixture.Fixtures) ([]chainhash.Hash, []recordedFilter) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fx.Dir, "rpc", "heights-0000-0094.hash-and-getblockfilter.json"))
	if err != nil {
		t.Fatal(err)
	}
	var byHeight map[string]struct {
		Hash   string         `json:"hash"`
		Filter recordedFilter `json:"getblockfilter"`
	}
	if err := json.Unmarshal(raw, &byHeight); err != nil {
		t.Fatal(err)
	}
	hashes := make([]chainhash.Hash, len(byHeight))
	filters := make([]recordedFilter, len(byHeight))
	for k, v := range byHeight {
		h, err := strconv.Atoi(k)
		if err != nil || h >= len(hashes) {
			t.Fatalf("bad height key %q", k)
		}
		hash, err := chainhash.NewHashFromStr(v.Hash)
		if err != nil {
			t.Fatal(err)
		}
		hashes[h], filters[h] = *hash, v.Filter
	}
	return hashes, filters
}

// prefixStore is an indexer.Store whose first heights are known only by hash
// and filter header (the recording has no blocks below 95); the follower
// commits everything above them. It keeps disconnected records by hash.
type prefixStore struct {
	mu      sync.Mutex
	prefix  []chainhash.Hash
	prefixH chainhash.Hash // filter header at the top of the prefix
	recs    []store.BlockRecord
	stale   map[chainhash.Hash]store.BlockRecord
	changed chan struct{}
}

func newPrefixStore(prefix []chainhash.Hash, topFilterHeader chainhash.Hash) *prefixStore {
	return &prefixStore{prefix: prefix, prefixH: topFilterHeader, stale: map[chainhash.Hash]store.BlockRecord{}, changed: make(chan struct{})}
}

func (s *prefixStore) Tip() (store.Tip, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.recs); n > 0 {
		r := s.recs[n-1]
		return store.Tip{Height: r.Height, Hash: r.Hash, FilterHeader: r.FilterHeader}, true
	}
	top := uint32(len(s.prefix) - 1)
	return store.Tip{Height: top, Hash: s.prefix[top], FilterHeader: s.prefixH}, true
}

func (s *prefixStore) HashAt(height uint32) (chainhash.Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(height) < len(s.prefix) {
		return s.prefix[height], nil
	}
	i := int(height) - len(s.prefix)
	if i >= len(s.recs) {
		return chainhash.Hash{}, store.ErrNotFound
	}
	return s.recs[i].Hash, nil
}

func (s *prefixStore) CommitBatch(recs []store.BlockRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if int(r.Height) != len(s.prefix)+len(s.recs) {
			return fmt.Errorf("%w: height %d", store.ErrNotConnected, r.Height)
		}
		delete(s.stale, r.Hash)
		s.recs = append(s.recs, r)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

func (s *prefixStore) Rollback(toHeight uint32) ([]store.BlockRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := int(toHeight) + 1 - len(s.prefix)
	if keep < 0 {
		return nil, fmt.Errorf("rollback into the recorded prefix (height %d)", toHeight)
	}
	gone := append([]store.BlockRecord(nil), s.recs[keep:]...)
	for _, r := range gone {
		s.stale[r.Hash] = r
	}
	s.recs = s.recs[:keep]
	close(s.changed)
	s.changed = make(chan struct{})
	return gone, nil
}

// waitTip waits until the store's tip is hash.
func (s *prefixStore) waitTip(t *testing.T, hash chainhash.Hash) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if tip, _ := s.Tip(); tip.Hash == hash {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			tip, _ := s.Tip()
			t.Fatalf("tip %d %s did not reach %s", tip.Height, tip.Hash, hash)
		}
	}
}

// record returns what the store holds for hash, active or stale.
func (s *prefixStore) record(hash chainhash.Hash) (store.BlockRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if r.Hash == hash {
			return r, true
		}
	}
	r, ok := s.stale[hash]
	return r, ok
}

// phasedNode replays the recording as the node looked at each moment: the
// recorder's node first had the stale branch (h113 stale-a, h114 stale-b)
// active, then reorganised to the new branch. The replay server knows only
// the final chain, so the active chain by height comes from here; every
// block, prevout and the tip's header still come over real JSON-RPC/REST
// from the replayed responses.
type phasedNode struct {
	*bitcoind.Client
	mu     sync.Mutex
	active []chainhash.Hash
}

func (n *phasedNode) setActive(chain []chainhash.Hash) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.active = append([]chainhash.Hash(nil), chain...)
}

func (n *phasedNode) GetBestBlockHash(context.Context) (chainhash.Hash, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.active[len(n.active)-1], nil
}

func (n *phasedNode) GetBlockHash(ctx context.Context, height int64) (chainhash.Hash, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if height < 0 || height >= int64(len(n.active)) {
		return chainhash.Hash{}, fmt.Errorf("getblockhash %d: %w", height, bitcoind.ErrBlockNotFound)
	}
	return n.active[height], nil
}

// TestFollowerOnRecordedCoreChain indexes the chain recorded from Bitcoin
// Core v31 through each prevout path (REST spenttxouts, getblock 3,
// getrawtransaction), woken only by the recorded ZMQ hashblock messages
// (one deliberately dropped, so the subscriber sees a sequence gap), through
// the recorded reorg. Every block's filter and filter header, stale blocks
// included, must equal Core's getblockfilter.
func TestFollowerOnRecordedCoreChain(t *testing.T) {
	fx := corefixture.Load(t)
	prefix, prefixFilters := recordedPrefix(t, fx)
	_, topHeader := prefixFilters[len(prefixFilters)-1].decode(t)
	capture, err := fx.ZMQCapture()
	if err != nil {
		t.Fatal(err)
	}

	// The chains the node had: up to h101 when ZMQ capture began, then
	// one block per hashblock message.
	chain := append([]chainhash.Hash(nil), prefix...)
	for _, b := range fx.Blocks {
		if b.Stale {
			continue
		}
		chain = append(chain, b.Hash)
	}
	byHash := map[chainhash.Hash]*corefixture.Block{}
	for _, b := range fx.Blocks {
		byHash[b.Hash] = b
	}
	pathTo := func(tip chainhash.Hash) []chainhash.Hash {
		b := byHash[tip]
		out := append([]chainhash.Hash(nil), chain[:b.Height+1]...)
		// Walk back through recorded blocks so stale tips give their branch.
		for h := tip; ; {
			blk, ok := byHash[h]
			if !ok {
				break
			}
			out[blk.Height] = h
			mb, err := blk.MsgBlock()
			if err != nil {
				t.Fatal(err)
			}
			h = mb.Header.PrevBlock
		}
		return out
	}
	var h101 chainhash.Hash
	for _, b := range fx.Blocks {
		if b.Height == 101 {
			h101 = b.Hash
		}
	}

	for _, mode := range []string{bitcoind.ModeREST, bitcoind.ModeGetBlock3, bitcoind.ModeTxIndex} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			srv := corefixture.NewServer(t, fx, corefixture.Options{})
			client, err := bitcoind.NewClient(bitcoind.Config{Host: srv.Host(), CookieFile: srv.CookieFile()}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			if mode == bitcoind.ModeREST {
				detected, err := bitcoind.DetectSource(ctx, client, testLogger(t))
				if err != nil {
					t.Fatal(err)
				}
				if detected.Mode() != bitcoind.ModeREST {
					t.Fatalf("Core v31 with -rest=1: detected %s", detected.Mode())
				}
			}
			source, err := bitcoind.NewSource(client, mode, bitcoind.SourceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node := &phasedNode{Client: client}
			node.setActive(pathTo(h101))
			st := newPrefixStore(prefix, topHeader)

			pub := corefixture.NewPublisher(t)
			sub, err := bitcoind.NewZMQSubscriber(bitcoind.ZMQConfig{Endpoint: pub.Endpoint()}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			wake := make(chan struct{}, 1)
			resyncs := 0
			var resyncMu sync.Mutex
			go func() { _ = sub.Run(ctx) }()
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case h := <-sub.Hints():
						if h.Resync {
							resyncMu.Lock()
							resyncs++
							resyncMu.Unlock()
						}
						select {
						case wake <- struct{}{}:
						default:
						}
					}
				}
			}()
			if err := pub.WaitSubscribed(ctx, "hashblock", 1); err != nil {
				t.Fatal(err)
			}

			// Poll once an hour: only ZMQ (and the first round) move it.
			f := NewFollower(Config{Genesis: fx.Genesis, Workers: 3, PollInterval: time.Hour}, node, source, st, wake, nil, testLogger(t))
			done := make(chan error, 1)
			runCtx, stop := context.WithCancel(ctx)
			go func() { done <- f.Run(runCtx) }()
			st.waitTip(t, h101)

			dropped, published := false, 0
			for _, m := range capture {
				if m.Topic != "hashblock" {
					continue
				}
				hashp, err := chainhash.NewHash(reverse(m.Body))
				if err != nil {
					t.Fatal(err)
				}
				hash := hashp
				if *hash == h101 {
					continue
				}
				node.setActive(pathTo(*hash))
				if !dropped && byHash[*hash].Height == 105 {
					dropped = true // the subscriber never sees this one
					continue
				}
				if n, err := pub.Publish(m.Frames()...); err != nil || n != 1 {
					t.Fatalf("publish: %d subscribers, %v", n, err)
				}
				published++
				st.waitTip(t, *hash)
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if published != 15 || !dropped {
				t.Fatalf("published %d hashblock messages (dropped one: %v), want 15 of the 16 recorded (h102..h115 and the 2 stale blocks)", published, dropped)
			}
			if len(st.stale) != 2 {
				t.Fatalf("%d stale records, want the 2 blocks of the recorded reorg", len(st.stale))
			}
			resyncMu.Lock()
			if resyncs == 0 {
				t.Error("the dropped hashblock message did not produce a resync hint")
			}
			resyncMu.Unlock()

			// Every recorded block, active or stale, equals Core.
			for _, b := range fx.Blocks {
				rec, ok := st.record(b.Hash)
				if !ok {
					t.Fatalf("h%d %s (%s) was never indexed", b.Height, b.Hash, b.Label)
				}
				var want recordedFilter
				if err := json.Unmarshal(b.FilterJSON, &want); err != nil {
					t.Fatal(err)
				}
				wantFilter, wantHeader := want.decode(t)
				if string(rec.Filter) != string(wantFilter) || rec.FilterHeader != wantHeader {
					t.Errorf("h%d %s: filter %x header %s; Core %x %s", b.Height, b.Label, rec.Filter, rec.FilterHeader, wantFilter, wantHeader)
				}
			}
			if tip, _ := st.Tip(); tip.Hash != fx.Tip {
				t.Errorf("final tip %s, recorded tip %s", tip.Hash, fx.Tip)
			}
		})
	}
}

// reverse returns b reversed (ZMQ hashblock bodies are in display order).
func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	return out
}
