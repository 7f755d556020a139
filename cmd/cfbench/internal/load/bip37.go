package load

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
)

// BloomConfig is the BIP-37 load: wallets that load a realistic filter
// and then ask for filtered blocks of the chain, a batch at a time, as
// bitcoinj does after getblocks.
type BloomConfig struct {
	Addr   string
	Params *chaincfg.Params
	// Hashes are the active chain's block hashes by height; the wallets
	// scan heights From.. of it.
	Hashes []chainhash.Hash
	From   uint32
	Peers  int
	// Batch is how many filtered blocks one getdata asks for.
	Batch int
	// Elements is what wallets' filters may hold of the chain (real
	// output pushes), so that some blocks match.
	Elements [][]byte
	// WalletN and FPR size each wallet's filter: WalletN elements (a few
	// real, the rest random keys) at FPR, with the spec's 5 % noise.
	WalletN int
	FPR     float64
	Seed    uint64
	// RequestTimeout bounds one batch.
	RequestTimeout time.Duration
}

// BloomResult is what the BIP-37 wallets got in the measured window.
type BloomResult struct {
	Peers          int          `json:"peers"`
	FilterBytes    int          `json:"filter_bytes"`
	FilterHashes   uint32       `json:"filter_hash_funcs"`
	Batches        int          `json:"batches_done"`
	FilteredBlocks int64        `json:"filtered_blocks"`
	MatchedTxs     int64        `json:"matched_txs"`
	Bytes          int64        `json:"bytes"`
	BlocksPerS     float64      `json:"filtered_blocks_per_s"`
	MBPerS         float64      `json:"mb_per_s"`
	BatchLatency   LatencyStats `json:"batch_latency"`
	Errors         int          `json:"errors"`
	FirstError     string       `json:"first_error,omitempty"`
}

// Bloom is a running BIP-37 load: started, then measured over a window,
// then stopped.
type Bloom struct {
	cfg     BloomConfig
	peers   []*Peer
	filter  *bloom.Filter // the first wallet's, for the report
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	from    time.Time
	until   time.Time
	tallies []bloomTally
}

type bloomTally struct {
	lat             []time.Duration
	blocks, matched int64
	bytes           int64
	err             error
}

// StartBloom connects the wallets, loads their filters and starts
// their loops; they run until stop.
func StartBloom(ctx context.Context, cfg BloomConfig) (*Bloom, error) {
	if int(cfg.From) >= len(cfg.Hashes) || cfg.Batch < 1 {
		return nil, fmt.Errorf("bip37 load: nothing to scan")
	}
	l := &Bloom{cfg: cfg, peers: make([]*Peer, cfg.Peers), tallies: make([]bloomTally, cfg.Peers)}
	errs := make([]error, cfg.Peers)
	handshakes := make(chan struct{}, maxConcurrentHandshakes)
	var wg sync.WaitGroup
	filters := make([]*bloom.Filter, cfg.Peers)
	for i := range cfg.Peers {
		rng := rand.New(rand.NewPCG(cfg.Seed, 1<<32+uint64(i)))
		f, err := walletLoadFilter(rng, cfg)
		if err != nil {
			return nil, err
		}
		filters[i] = f
		wg.Go(func() {
			handshakes <- struct{}{}
			defer func() { <-handshakes }()
			p, err := Dial(cfg.Addr, cfg.Params, cfg.Seed<<24+uint64(i)+1<<22, 10*time.Second)
			if err == nil {
				err = p.send(f.MsgFilterLoad())
			}
			l.peers[i], errs[i] = p, err
		})
	}
	wg.Wait()
	l.filter = filters[0]
	for _, err := range errs {
		if err != nil {
			l.close()
			return nil, fmt.Errorf("bip37 wallet: %w", err)
		}
	}
	ctx, l.cancel = context.WithCancel(ctx)
	for i, p := range l.peers {
		l.wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
			l.run(ctx, i, p, rng)
		})
	}
	return l, nil
}

// walletLoadFilter is one wallet's filter: WalletN elements, one of them
// a real key hash of the chain (so some blocks carry matched
// transactions, and BLOOM_UPDATE_ALL follows their spends), the rest random
// 20-byte key hashes, at FPR with the spec's noise, BLOOM_UPDATE_ALL.
func walletLoadFilter(rng *rand.Rand, cfg BloomConfig) (*bloom.Filter, error) {
	elements := make([][]byte, cfg.WalletN)
	for i := range elements {
		if i == 0 && len(cfg.Elements) > 0 {
			elements[i] = cfg.Elements[rng.IntN(len(cfg.Elements))]
			continue
		}
		e := make([]byte, 20)
		for j := range e {
			e[j] = byte(rng.Uint32())
		}
		elements[i] = e
	}
	pol := bloom.Privacy{FPR: cfg.FPR, Noise: bloom.DefaultNoise, Flags: wire.BloomUpdateAll, MinElements: bloom.DefaultMinElements}
	f, _, err := bloom.BuildWalletFilter(elements, pol, rng.Uint32(), rng)
	return f, err
}

// measure counts what completes between from and until.
func (l *Bloom) Measure(from, until time.Time) {
	l.mu.Lock()
	l.from, l.until = from, until
	l.mu.Unlock()
}

func (l *Bloom) window() (time.Time, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.from, l.until
}

// run is one wallet's closed loop: a batch of filtered blocks from a random
// height, then a ping, counting what comes before the pong.
func (l *Bloom) run(ctx context.Context, i int, p *Peer, rng *rand.Rand) {
	t := &l.tallies[i]
	n := uint32(len(l.cfg.Hashes))
	var nonce uint64
	for ctx.Err() == nil {
		span := n - l.cfg.From // blocks in the window; batches stay inside it
		first := l.cfg.From + rng.Uint32N(max(1, span-min(span, uint32(l.cfg.Batch))+1))
		last := min(n-1, first+uint32(l.cfg.Batch)-1)
		start := time.Now()
		if err := p.SetDeadline(start.Add(l.cfg.RequestTimeout)); err != nil {
			t.err = err
			return
		}
		gd := wire.NewMsgGetDataSizeHint(uint(last - first + 1))
		for h := first; h <= last; h++ {
			_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, &l.cfg.Hashes[h]))
		}
		nonce++
		err := p.send(gd)
		if err == nil {
			err = p.send(wire.NewMsgPing(nonce))
		}
		var blocks, matched, size int64
		if err == nil {
			blocks, matched, size, err = p.readUntilPong(nonce)
		}
		done := time.Now()
		if err != nil {
			if ctx.Err() == nil {
				t.err = fmt.Errorf("filtered blocks %d..%d: %w", first, last, err)
			}
			return
		}
		if blocks != int64(last-first+1) {
			t.err = fmt.Errorf("filtered blocks %d..%d: %d merkleblocks", first, last, blocks)
			return
		}
		from, until := l.window()
		if from.IsZero() || start.Before(from) || done.After(until) {
			continue
		}
		t.lat = append(t.lat, done.Sub(start))
		t.blocks += blocks
		t.matched += matched
		t.bytes += size
	}
}

// readUntilPong reads the answers to a filtered-block getdata up to the
// pong of nonce: merkleblocks and transactions, counted, not decoded.
func (p *Peer) readUntilPong(nonce uint64) (blocks, txs, size int64, err error) {
	for {
		f, err := p.read()
		if err != nil {
			return 0, 0, 0, err
		}
		switch {
		case f.Header.Is(wire.CmdPong):
			if len(f.Payload) == 8 && binary.LittleEndian.Uint64(f.Payload) == nonce {
				return blocks, txs, size, nil
			}
		case f.Header.Is(wire.CmdMerkleBlock):
			blocks++
			size += int64(f.Size())
		case f.Header.Is(wire.CmdTx):
			txs++
			size += int64(f.Size())
		case f.Header.Is(wire.CmdNotFound):
			return 0, 0, 0, fmt.Errorf("notfound")
		}
	}
}

// stop ends the wallets' loops and returns the window's result.
func (l *Bloom) Stop() BloomResult {
	l.cancel()
	l.close() // unblocks reads
	l.wg.Wait()
	from, until := l.window()
	res := BloomResult{Peers: l.cfg.Peers}
	if l.filter != nil {
		res.FilterBytes, res.FilterHashes = l.filter.Size(), l.filter.HashFuncs()
	}
	var lat []time.Duration
	for _, t := range l.tallies {
		lat = append(lat, t.lat...)
		res.FilteredBlocks += t.blocks
		res.MatchedTxs += t.matched
		res.Bytes += t.bytes
		if t.err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = t.err.Error()
			}
		}
	}
	res.Batches = len(lat)
	res.BatchLatency = NewLatencyStats(lat)
	if secs := until.Sub(from).Seconds(); secs > 0 {
		res.BlocksPerS = float64(res.FilteredBlocks) / secs
		res.MBPerS = float64(res.Bytes) / 1e6 / secs
	}
	return res
}

func (l *Bloom) close() {
	for _, p := range l.peers {
		if p != nil {
			_ = p.Close()
		}
	}
}

// ChainElements reads blocks of the chain from the node and returns their
// outputs' key hashes (what real wallets' filters hold) and the blocks'
// average size.
func ChainElements(ctx context.Context, blocks func(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error), hashes []chainhash.Hash) ([][]byte, int, error) {
	var out [][]byte
	size := 0
	for _, h := range hashes {
		blk, err := blocks(ctx, h)
		if err != nil {
			return nil, 0, err
		}
		size += blk.SerializeSize()
		for _, tx := range blk.Transactions[1:] { // not the miner's coinbase
			for _, o := range tx.TxOut {
				if s := o.PkScript; len(s) == 25 && s[0] == 0x76 && s[1] == 0xa9 && s[2] == 0x14 {
					out = append(out, bytes.Clone(s[3:23])) // P2PKH key hash
				} else if len(s) == 22 && s[0] == 0x00 && s[1] == 0x14 {
					out = append(out, bytes.Clone(s[2:22])) // P2WPKH key hash
				}
			}
		}
	}
	return out, size / max(1, len(hashes)), nil
}
