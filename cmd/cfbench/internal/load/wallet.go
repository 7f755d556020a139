package load

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	btcbloom "github.com/btcsuite/btcd/btcutil/v2/bloom"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
)

// The honest wallet's shape: a filter for walletElements scripts (a few
// of them paid in the window, so that some blocks carry matches) at the
// light-client spec's rate with its noise, then filtered blocks of the
// chain's walletWindow most recent blocks, walletBatch to a getdata.
const (
	walletElements   = 100
	walletRealKeys   = 3
	walletWindow     = 20
	walletBatch      = 10
	walletRoundLimit = time.Minute
	// walletPause is the wallet's pause after each batch (a wallet
	// handles what it got before it asks on). A wallet asking in a closed
	// loop beside 32 peers that do the same can only ever have a 33rd of
	// what it has alone, under any fair scheduler; the goal that it stay
	// within a small multiple of its baseline is about a wallet that asks
	// now and then, whom per-peer fairness is meant to serve first.
	walletPause = time.Second
)

// WalletChain is what the honest BIP-37 wallet loads and checks: its
// filter, and for each block of the window the frames a correct server
// sends for it, built with btcd's bloom package (btcutil's
// NewMerkleBlock): the merkleblock, then the matched transactions in
// block order, without witnesses (Core's answer to a filtered-block
// getdata). The filter's update mode is BLOOM_UPDATE_NONE, so each
// block's answer is the same whatever was asked before. Read-only once
// built.
type WalletChain struct {
	net    wire.BitcoinNet
	hashes []chainhash.Hash
	// From is the window's first height; the window runs to the tip.
	From uint32
	// Load is the wallet's filterload.
	Load *wire.MsgFilterLoad
	// frames[h-From] are height h's answer frames back to back.
	frames [][]byte
	// Matched is how many transactions of the window the filter matches.
	Matched int
}

// BuildWalletChain fetches the chain's walletWindow most recent blocks
// (block fetches one by hash) and builds the wallet's filter from seed and
// the answers btcd's bloom package gives for them.
func BuildWalletChain(ctx context.Context, params *chaincfg.Params, block func(context.Context, chainhash.Hash) (*wire.MsgBlock, error), hashes []chainhash.Hash, seed uint64) (*WalletChain, error) {
	if len(hashes) == 0 {
		return nil, errors.New("wallet: no chain")
	}
	from := uint32(len(hashes) - min(len(hashes), walletWindow))
	blocks := make(map[chainhash.Hash]*wire.MsgBlock)
	for _, h := range hashes[from:] {
		blk, err := block(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("wallet: block %s: %w", h, err)
		}
		blocks[h] = blk
	}
	elements, _, err := ChainElements(ctx, func(_ context.Context, h chainhash.Hash) (*wire.MsgBlock, error) { return blocks[h], nil }, hashes[from:])
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 37))
	watched := make([][]byte, walletElements)
	for i := range watched {
		if i < walletRealKeys && len(elements) > 0 {
			watched[i] = elements[rng.IntN(len(elements))]
			continue
		}
		watched[i] = make([]byte, 20)
		for j := range watched[i] {
			watched[i][j] = byte(rng.Uint32())
		}
	}
	pol := bloom.Privacy{FPR: bloom.DefaultFPR, Noise: bloom.DefaultNoise, Flags: wire.BloomUpdateNone, MinElements: bloom.DefaultMinElements}
	f, _, err := bloom.BuildWalletFilter(watched, pol, rng.Uint32(), rng)
	if err != nil {
		return nil, fmt.Errorf("wallet filter: %w", err)
	}
	wc := &WalletChain{net: params.Net, hashes: hashes, From: from, Load: f.MsgFilterLoad()}
	for _, h := range hashes[from:] {
		blk := btcutil.NewBlock(blocks[h])
		mb, matched := btcbloom.NewMerkleBlock(blk, btcbloom.LoadFilter(wc.Load))
		var buf bytes.Buffer
		if _, err := wire.WriteMessageWithEncodingN(&buf, mb, wire.ProtocolVersion, params.Net, wire.BaseEncoding); err != nil {
			return nil, fmt.Errorf("wallet: encode merkleblock %s: %w", h, err)
		}
		for _, i := range matched {
			if _, err := wire.WriteMessageWithEncodingN(&buf, blocks[h].Transactions[i], wire.ProtocolVersion, params.Net, wire.BaseEncoding); err != nil {
				return nil, fmt.Errorf("wallet: encode tx %d of %s: %w", i, h, err)
			}
		}
		wc.frames = append(wc.frames, buf.Bytes())
		wc.Matched += len(matched)
	}
	return wc, nil
}

// WalletResult is what the honest wallet saw.
type WalletResult struct {
	// Rounds are the batches answered in full and checked; Blocks and
	// MatchedTxs what they held.
	Rounds     int   `json:"rounds"`
	Blocks     int64 `json:"filtered_blocks"`
	MatchedTxs int64 `json:"matched_txs"`
	// Received counts every filtered block received and checked, those of
	// batches not finished included: how far a stuck wallet got.
	Received int64 `json:"filtered_blocks_received"`
	// Round is the latency of the answered batches; MeanRound the wall
	// time spent in batches, the one under way at the end included,
	// divided by the rounds answered (at least one), so that a wallet
	// stuck in one batch shows it.
	Round     LatencyStats  `json:"round_latency"`
	MeanRound time.Duration `json:"mean_round_ns"`
	// Refused counts connections refused or cut before the wallet's
	// first batch was sent; Disconnects those lost later; Wrong the
	// batches whose frames differed from btcd's answers.
	Refused     int    `json:"refused"`
	Disconnects int    `json:"disconnects"`
	Wrong       int    `json:"wrong_answers"`
	FirstError  string `json:"first_error,omitempty"`
}

// Wallet is an honest BIP-37 wallet from one source address: it loads the
// WalletChain's filter, then asks walletBatch filtered blocks of the window
// at a time, a ping behind each batch, walletPause between batches, and
// checks every
// merkleblock and transaction frame, byte for byte, against btcd's
// answer. It reconnects after a refusal or a lost connection.
type Wallet struct {
	addr, ip string
	params   *chaincfg.Params
	chain    *WalletChain
	rng      *rand.Rand

	mu    sync.Mutex
	res   WalletResult
	lat   []time.Duration
	spent time.Duration
}

// NewWallet makes the wallet; it runs with Run.
func NewWallet(addr, ip string, params *chaincfg.Params, chain *WalletChain, seed uint64) *Wallet {
	return &Wallet{addr: addr, ip: ip, params: params, chain: chain, rng: rand.New(rand.NewPCG(seed, 38))}
}

// errWalletWrong marks an answer that differs from btcd's.
var errWalletWrong = errors.New("differs from btcd's answer")

// Run loops until ctx ends.
func (w *Wallet) Run(ctx context.Context) {
	var nonce uint64
	for ctx.Err() == nil {
		p, err := DialFrom(w.addr, w.ip, w.params, w.rng.Uint64(), 10*time.Second)
		if err == nil {
			err = p.send(w.chain.Load)
		}
		if err != nil {
			if p != nil {
				p.Close()
			}
			w.fail(ctx, &w.res.Refused, fmt.Errorf("connect and filterload: %w", err))
			continue
		}
		stop := context.AfterFunc(ctx, func() { p.Close() })
		for ctx.Err() == nil {
			nonce++
			if err := w.round(p, nonce); err != nil {
				counter := &w.res.Disconnects
				if errors.Is(err, errWalletWrong) {
					counter = &w.res.Wrong
				}
				w.fail(ctx, counter, err)
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(walletPause):
			}
		}
		stop()
		p.Close()
	}
}

// fail counts err under counter unless ctx has ended, then pauses.
func (w *Wallet) fail(ctx context.Context, counter *int, err error) {
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	*counter++
	if w.res.FirstError == "" {
		w.res.FirstError = err.Error()
	}
	w.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-time.After(250 * time.Millisecond):
	}
}

// round asks one batch and checks its answer up to the pong of nonce.
func (w *Wallet) round(p *Peer, nonce uint64) error {
	n := uint32(len(w.chain.hashes))
	first := w.chain.From + w.rng.Uint32N(max(1, n-w.chain.From-min(n-w.chain.From, walletBatch)+1))
	last := min(n-1, first+walletBatch-1)
	want := bytes.Join(w.chain.frames[first-w.chain.From:last-w.chain.From+1], nil)
	start := time.Now()
	defer func() {
		w.mu.Lock()
		w.spent += time.Since(start)
		w.mu.Unlock()
	}()
	_ = p.SetDeadline(start.Add(walletRoundLimit))
	gd := wire.NewMsgGetDataSizeHint(uint(last - first + 1))
	for h := first; h <= last; h++ {
		_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, &w.chain.hashes[h]))
	}
	if err := p.send(gd); err != nil {
		return fmt.Errorf("filtered blocks %d..%d: %w", first, last, err)
	}
	if err := p.send(wire.NewMsgPing(nonce)); err != nil {
		return fmt.Errorf("filtered blocks %d..%d: %w", first, last, err)
	}
	off, blocks, txs := 0, int64(0), int64(0)
	for {
		f, err := p.read()
		if err != nil {
			return fmt.Errorf("filtered blocks %d..%d: %w", first, last, err)
		}
		switch {
		case f.Header.Is(wire.CmdPong) && len(f.Payload) == 8 && binary.LittleEndian.Uint64(f.Payload) == nonce:
			if off != len(want) {
				return fmt.Errorf("filtered blocks %d..%d: %w: %d of %d bytes before the pong", first, last, errWalletWrong, off, len(want))
			}
			took := time.Since(start)
			w.mu.Lock()
			w.res.Rounds++
			w.res.Blocks += blocks
			w.res.MatchedTxs += txs
			w.lat = append(w.lat, took)
			w.mu.Unlock()
			return nil
		case f.Header.Is(wire.CmdNotFound):
			return fmt.Errorf("filtered blocks %d..%d: notfound", first, last)
		case f.Header.Is(wire.CmdMerkleBlock), f.Header.Is(wire.CmdTx):
			end := off + f.Size()
			if end > len(want) || !bytes.Equal(want[off:off+len(f.Header)], f.Header) || !bytes.Equal(want[off+len(f.Header):end], f.Payload) {
				return fmt.Errorf("filtered blocks %d..%d: %w: %s frame at byte %d of the answer", first, last, errWalletWrong, f.Header.Command(), off)
			}
			off = end
			if f.Header.Is(wire.CmdTx) {
				txs++
			} else {
				blocks++
				w.mu.Lock()
				w.res.Received++
				w.mu.Unlock()
			}
		}
	}
}

// Result returns what the wallet saw so far.
func (w *Wallet) Result() WalletResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.res
	r.Round = NewLatencyStats(append([]time.Duration(nil), w.lat...))
	r.MeanRound = w.spent / time.Duration(max(1, r.Rounds))
	return r
}
