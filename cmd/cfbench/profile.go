package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/selfprofile"
	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
)

// profileRun is the in-process catch-up under the CPU profiler.
type profileRun struct {
	Env         syncEnv
	Source      syncSource
	StorePath   string // a fresh store file
	ProfilePath string // cpu.pprof is written here; listings beside it
	// Trace records an execution trace of the run in trace.out beside
	// the profile.
	Trace       bool
	TipHeight   uint32
	Workers     int
	BatchBlocks int
	// Oracle, when set, is btcd's index to check the store against.
	Oracle []btcdtest.FilterRecord
	TopN   int
}

// profileResult is what the in-process catch-up measured.
type profileResult struct {
	// Wall is from the follower's start to the store at the node's tip.
	Wall time.Duration `json:"wall_ns"`
	// CPU is this process's user plus system time over Wall; nothing but
	// the follower runs meanwhile.
	CPU time.Duration `json:"cpu_ns"`
	// Source is the source's name.
	Source string `json:"source"`
	// Blocks, Elements, BlockBytes and FilterBytes are totals over the
	// chain. Elements counts what the filters are built from (scripts
	// before de-duplication), as cfindexd's elements_per_s does;
	// BlockBytes the serialized blocks.
	Blocks      int   `json:"blocks"`
	Elements    int64 `json:"elements"`
	BlockBytes  int64 `json:"block_bytes"`
	FilterBytes int64 `json:"filter_bytes"`
	// FromCache and FromNode count the spent scripts resolved from the
	// source's script cache and by asking the node (txindex sources).
	FromCache uint64 `json:"prevouts_from_cache"`
	FromNode  uint64 `json:"prevouts_from_node"`
	// Connections is how many TCP connections the machine opened during
	// the run (Linux; -1 elsewhere): btcd closes its RPC connection after
	// every HTTP request, so each RPC request costs a connect and a close.
	Connections int64 `json:"tcp_connections"`
	// Verified is true when every filter and filter header equals btcd's.
	Verified bool `json:"verified"`
	// Profile is the path of cpu.pprof; Top the head of `go tool pprof
	// -top` (flat), TopCum of `-top -cum` limited to cfindexd's packages.
	Profile string   `json:"profile"`
	Top     []string `json:"top"`
	TopCum  []string `json:"top_cum"`
	// Heap is the heap profile taken halfway; HeapTop the head of its
	// `go tool pprof -top -sample_index=inuse_space` (live bytes).
	Heap    string   `json:"heap_profile"`
	HeapTop []string `json:"heap_top"`
	// PeakLive is the most a collection left live (runtime/metrics
	// /gc/heap/live:bytes, sampled); PeakHeapTop the top of the heap
	// profile written then (heap-peak.pprof).
	PeakLive    int64    `json:"peak_live_bytes"`
	PeakHeapTop []string `json:"peak_heap_top"`
}

// profileFollower runs indexer.Follower wired as cmd/cfindexd wires it
// against the node into a fresh store until the store reaches the tip,
// under the CPU profiler, then verifies the store against btcd if asked.
func profileFollower(ctx context.Context, run profileRun) (*profileResult, error) {
	node := run.Env.Node
	st, err := store.Open(run.StorePath, *node.Params().GenesisHash, store.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	client, source, closeAll, err := run.Source.Open(ctx, run.Env)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	if err := client.CheckGenesis(ctx, *node.Params().GenesisHash); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	counted := countSource(source)
	obs := &commitCounter{}
	follower := indexer.NewFollower(indexer.Config{
		Genesis:     *node.Params().GenesisHash,
		Workers:     run.Workers,
		BatchBlocks: run.BatchBlocks,
	}, client, counted, st, nil, obs, zerolog.Nop())

	f, err := os.Create(run.ProfilePath)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	dir := filepath.Dir(run.ProfilePath)
	stopTrace, err := selfprofile.StartTrace(run.Trace, filepath.Join(dir, "trace.out"))
	if err != nil {
		pprof.StopCPUProfile()
		return nil, err
	}
	defer stopTrace()
	cpu0, conns0 := selfprofile.SelfCPU(), procstat.TCPActiveOpens()
	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	var runErr error
	go func() {
		runErr = follower.Run(runCtx)
		close(done)
	}()
	// What the heap holds halfway, in the thick of the catch-up (the
	// script cache full, runs in flight): live objects as of a collection.
	// And when the live heap peaks: heap-peak.pprof is rewritten whenever
	// a collection leaves more live than any before.
	heapPath := filepath.Join(dir, "heap.pprof")
	peakDone := make(chan struct{})
	peak := selfprofile.WatchPeakHeap(filepath.Join(dir, "heap-peak.pprof"), peakDone)
	waitErr := waitStoreTip(ctx, st, run.TipHeight/2, done)
	heapErr := selfprofile.WriteHeapProfile(heapPath)
	if waitErr == nil {
		waitErr = waitStoreTip(ctx, st, run.TipHeight, done)
	}
	wall := time.Since(start)
	cpu, conns := selfprofile.SelfCPU()-cpu0, procstat.TCPActiveOpens()
	close(peakDone)
	peakLive := <-peak
	stop()
	<-done
	pprof.StopCPUProfile()
	stopTrace()
	if runErr != nil {
		return nil, fmt.Errorf("follower: %w", runErr)
	}
	if waitErr != nil {
		return nil, waitErr
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if heapErr != nil {
		return nil, heapErr
	}

	res := &profileResult{
		Source:      run.Source.Name,
		Wall:        wall,
		CPU:         cpu,
		Blocks:      int(obs.blocks.Load()),
		Elements:    counted.counts().elements.Load(),
		BlockBytes:  counted.counts().bytes.Load(),
		FilterBytes: obs.filterBytes.Load(),
		Profile:     run.ProfilePath,
		Connections: -1,
	}
	if c, ok := source.(prevouts.PrevoutCounter); ok {
		res.FromCache, res.FromNode = c.PrevoutCounts()
	}
	if conns0 >= 0 && conns >= 0 {
		res.Connections = conns - conns0
	}
	if run.Oracle != nil {
		if err := btcdtest.CompareRecords(st, run.Oracle); err != nil {
			return nil, fmt.Errorf("verify against btcd: %w", err)
		}
		res.Verified = true
	}
	if res.Top, err = selfprofile.PprofTop(ctx, run.ProfilePath, filepath.Join(dir, "cpu-top.txt"), run.TopN); err != nil {
		return nil, err
	}
	if res.TopCum, err = selfprofile.PprofTop(ctx, run.ProfilePath, filepath.Join(dir, "cpu-top-cum.txt"), run.TopN,
		"-cum", "-focus=github.com/cfindexd/"); err != nil {
		return nil, err
	}
	res.Heap = heapPath
	if res.HeapTop, err = selfprofile.PprofTop(ctx, heapPath, filepath.Join(dir, "heap-top.txt"), run.TopN, "-sample_index=inuse_space"); err != nil {
		return nil, err
	}
	res.PeakLive = peakLive
	if peakLive > 0 {
		if res.PeakHeapTop, err = selfprofile.PprofTop(ctx, filepath.Join(dir, "heap-peak.pprof"), filepath.Join(dir, "heap-peak-top.txt"), run.TopN, "-sample_index=inuse_space"); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// waitStoreTip waits until the store's tip is at height, the follower ends
// (done is closed) or ctx ends.
func waitStoreTip(ctx context.Context, st *store.Store, height uint32, done <-chan struct{}) error {
	for {
		changed := st.TipChanged()
		if tip, ok := st.Tip(); ok && tip.Height >= height {
			return nil
		}
		select {
		case <-changed:
		case <-done:
			return errors.New("follower stopped before the store reached the tip")
		case <-ctx.Done():
			tip, _ := st.Tip()
			return fmt.Errorf("store at height %d of %d: %w", tip.Height, height, ctx.Err())
		}
	}
}

// sourceCounts totals what a counted source passed on: filter elements,
// with the indexer's own element rules, and serialized block bytes.
type sourceCounts struct {
	elements, bytes atomic.Int64
}

// countedSource is a BlockSource that counts what it passes on.
type countedSource interface {
	indexer.BlockSource
	counts() *sourceCounts
}

// countSource wraps source so the in-process run counts elements and
// bytes. A source that fetches runs stays one (so the profiled catch-up
// batches as the daemon's does); any other stays a plain BlockSource.
func countSource(source prevouts.BlockSource) countedSource {
	c := &countingSource{inner: source}
	if runs, ok := source.(prevouts.RunBlockSource); ok {
		return &countingRunSource{countingSource: c, runs: runs}
	}
	return c
}

// countingSource counts the blocks of FetchBlock.
type countingSource struct {
	inner prevouts.BlockSource
	n     sourceCounts
}

func (s *countingSource) counts() *sourceCounts { return &s.n }

// FetchBlock implements indexer.BlockSource.
func (s *countingSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	block, prev, err := s.inner.FetchBlock(ctx, hash)
	if err != nil {
		return block, prev, err
	}
	var b gcs.BasicBuilder
	if err := gcs.AddBasicElements(&b, block, prev); err == nil {
		s.n.elements.Add(int64(b.Len()))
	}
	s.n.bytes.Add(int64(block.SerializeSize()))
	return block, prev, nil
}

// PrevoutCounts passes the inner source's counts on, so the follower's
// progress lines report them as the daemon's do.
func (s *countingSource) PrevoutCounts() (fromCache, fromNode uint64) {
	if c, ok := s.inner.(prevouts.PrevoutCounter); ok {
		return c.PrevoutCounts()
	}
	return 0, 0
}

// countingRunSource is countingSource for a source that fetches runs.
type countingRunSource struct {
	*countingSource
	runs prevouts.RunBlockSource
}

// FetchBlocks implements prevouts.RunBlockSource.
func (s *countingRunSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *prevouts.RunTurn) ([]prevouts.FetchedBlock, error) {
	out, err := s.runs.FetchBlocks(ctx, hashes, turn)
	if err != nil {
		return nil, err
	}
	for _, fb := range out {
		s.n.elements.Add(int64(gcs.CountBasicScripts(fb.OutputScripts, fb.PrevScripts)))
		s.n.bytes.Add(int64(len(fb.Raw)))
	}
	return out, nil
}

// commitCounter is an indexer.Observer that totals committed blocks and
// filter bytes.
type commitCounter struct {
	indexer.NopObserver
	blocks      atomic.Int64
	filterBytes atomic.Int64
}

// Committed implements indexer.Observer.
func (c *commitCounter) Committed(_ store.Tip, blocks int, filterBytes int) {
	c.blocks.Add(int64(blocks))
	c.filterBytes.Add(int64(filterBytes))
}
