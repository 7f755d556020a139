package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/bitcoind"
	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/rest"
	"github.com/cfindexd/cfindexd/store"
)

// storeFileName is the store's file below <datadir>/<chain>/.
const storeFileName = "cfindexd.db"

// prevoutModes maps the prevoutsource config values to bitcoind's modes.
func prevoutModes() map[string]string {
	return map[string]string{
		"auto":     "",
		"rest":     bitcoind.ModeREST,
		"getblock": bitcoind.ModeGetBlock3,
		"txindex":  bitcoind.ModeTxIndex,
	}
}

// runDaemon wires the components and runs them until ctx ends or one fails
// for good. A nil return means a clean shutdown.
func runDaemon(ctx context.Context, cfg Config, log zerolog.Logger) error {
	nw, err := lookupNetwork(cfg.Chain)
	if err != nil {
		return err
	}
	dir := filepath.Join(cfg.DataDir, nw.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create datadir: %w", err)
	}
	storePath := filepath.Join(dir, storeFileName)
	st, err := store.Open(storePath, *nw.Params.GenesisHash, store.Options{Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open store %s: %w", storePath, err)
	}
	defer st.Close()

	rpcHost := net.JoinHostPort(cfg.RPCConnect, strconv.Itoa(cfg.RPCPort))
	client, err := bitcoind.NewClient(bitcoind.Config{
		Host:       rpcHost,
		User:       cfg.RPCUser,
		Password:   cfg.RPCPassword,
		CookieFile: cfg.RPCCookieFile,
		RESTURL:    cfg.RESTURL,
	}, log.With().Str("component", "bitcoind").Logger())
	if err != nil {
		return fmt.Errorf("node client: %w", err)
	}
	defer client.Close()

	tip, haveTip := st.Tip()
	log.Info().Str("version", version).Str("chain", nw.Name).Str("store", storePath).
		Uint32("store_height", tip.Height).Bool("store_empty", !haveTip).Str("node", rpcHost).Msg("starting")

	nodeP2P, guessed := nodeP2PAddr(cfg, nw)
	source, err := waitForNode(ctx, client, nw, bitcoind.SourceOptions{
		Force:            prevoutModes()[cfg.PrevoutSource],
		NodeP2P:          nodeP2P,
		NodeP2PGuessed:   guessed,
		P2PNet:           nw.Params.Net,
		ScriptCacheBytes: scriptCacheBytes(cfg.ScriptCache),
		RPCThreads:       cfg.RPCThreads,
	}, log)
	if err != nil || ctx.Err() != nil {
		return err
	}
	if closer, ok := source.(io.Closer); ok {
		defer closer.Close()
	}
	if err := checkNodeState(ctx, client, st, log); err != nil {
		return err
	}

	metrics := rest.NewMetrics()
	if haveTip {
		metrics.SetIndexedHeight(tip.Height)
	}
	if counted, ok := source.(bitcoind.PrevoutCounter); ok {
		metrics.WatchPrevouts(counted.PrevoutCounts)
	}
	httpServer, err := rest.New(rest.Config{
		Addr:             cfg.HTTPListen,
		Net:              nw.Params.Net,
		ReorgSafetyDepth: uint32(cfg.ReorgSafetyDepth),
		ReadyMaxLag:      uint32(cfg.ReadyBlocks),
	}, st, metrics, log)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}

	p2pServer, err := p2p.New(p2p.Config{
		ListenAddr:    cfg.Listen,
		Params:        nw.Params,
		View:          p2p.NewStoreView(st),
		Blocks:        p2p.NewNodeBlockFetcher(client),
		Relay:         client,
		RelayTx:       cfg.RelayTx,
		UserAgent:     "/cfindexd:" + version + "/",
		MaxPeers:      cfg.MaxPeers,
		MaxPeersPerIP: cfg.MaxPeersPerIP,
		Log:           log,
		Metrics:       metrics,
	})
	if err != nil {
		return fmt.Errorf("p2p: %w", err)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return httpServer.Run(gctx) })
	g.Go(func() error { return p2pServer.Run(gctx) })
	g.Go(func() error { reportStoreSize(gctx, st, metrics); return nil })
	wake := make(chan struct{}, 1)
	if cfg.ZMQPubHashBlock != "" {
		sub, err := bitcoind.NewZMQSubscriber(bitcoind.ZMQConfig{Endpoint: cfg.ZMQPubHashBlock},
			log.With().Str("component", "zmq").Logger())
		if err != nil {
			return fmt.Errorf("zmq: %w", err)
		}
		g.Go(func() error { return sub.Run(gctx) })
		g.Go(func() error { forwardHints(gctx, sub.Hints(), wake); return nil })
	}
	follower := indexer.NewFollower(indexer.Config{
		Genesis:      *nw.Params.GenesisHash,
		Workers:      cfg.Workers,
		BatchBlocks:  cfg.BatchBlocks,
		PollInterval: cfg.PollInterval,
	}, client, source, st, wake, metrics, log.With().Str("component", "indexer").Logger())
	g.Go(func() error { return follower.Run(gctx) })
	return g.Wait()
}

// waitForNode waits until the node answers, is on the configured network
// and offers a prevout source. Unreachable nodes, bad credentials and a node
// still warming up are retried with backoff, logged each time; a node on
// another network, or one with no way to get prevouts, is fatal.
func waitForNode(ctx context.Context, client *bitcoind.Client, nw network, opts bitcoind.SourceOptions, log zerolog.Logger) (bitcoind.BlockSource, error) {
	backoff := bitcoind.NewBackoff(time.Second, 30*time.Second, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)))
	for {
		err := client.CheckGenesis(ctx, *nw.Params.GenesisHash)
		if err == nil {
			var source bitcoind.BlockSource
			source, err = bitcoind.DetectSource(ctx, client, log.With().Str("component", "bitcoind").Logger(), opts)
			if err == nil {
				return source, nil
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case errors.Is(err, bitcoind.ErrWrongNetwork):
			return nil, fmt.Errorf("node is not on %s: %w", nw.Name, err)
		case errors.Is(err, bitcoind.ErrNoPrevoutSource):
			return nil, err
		}
		wait := backoff.Next()
		log.Warn().Err(err).Dur("retry_in", wait).Msg("waiting for the node")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
	}
}

// checkNodeState logs what the operator should know about the node once at
// start (initial block download, pruning) and refuses to run when the node
// has already pruned blocks the store still needs: no retry could fix that.
func checkNodeState(ctx context.Context, client *bitcoind.Client, st *store.Store, log zerolog.Logger) error {
	info, err := client.GetChainInfo(ctx)
	if err != nil {
		// Not fatal: the follower retries the node anyway.
		log.Warn().Err(err).Msg("getblockchaininfo failed; continuing")
		return nil
	}
	if info.IBD {
		log.Info().Uint32("node_blocks", info.Blocks).Uint32("node_headers", info.Headers).
			Msg("node is in initial block download; indexing its blocks as they arrive")
	}
	if info.Pruned {
		next := uint32(0)
		if tip, ok := st.Tip(); ok {
			next = tip.Height + 1
		}
		if next < info.PruneHeight {
			return fmt.Errorf("node has pruned blocks below height %d but the store needs them from height %d: restart the node without -prune (and -reindex), or with a store that already reaches height %d", info.PruneHeight, next, info.PruneHeight)
		}
		log.Info().Uint32("prune_height", info.PruneHeight).Msg("node is pruned; cfindexd needs each new block before the node prunes it")
	}
	return nil
}

// reportStoreSize keeps the store-size gauge current.
func reportStoreSize(ctx context.Context, st *store.Store, m *rest.Metrics) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		m.SetStoreSize(st.SizeBytes())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// forwardHints turns ZMQ hints into wake-ups of the follower. The follower
// re-reads the node's tip on every wake-up, so hints can be coalesced: a
// full wake channel already means "look again".
func forwardHints(ctx context.Context, hints <-chan bitcoind.Hint, wake chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-hints:
			if !ok {
				return
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}

// nodeP2PAddr returns the node's P2P address to fetch raw blocks from:
// nodep2p as configured, or for "auto" the rpcconnect host on the chain's
// default node P2P port (guessed is then true).
func nodeP2PAddr(cfg Config, nw network) (addr string, guessed bool) {
	if cfg.NodeP2P != "auto" {
		return cfg.NodeP2P, false
	}
	return net.JoinHostPort(cfg.RPCConnect, nw.Params.DefaultPort), true
}

// scriptCacheBytes turns the scriptcache key (MiB, 0 = off) into
// SourceOptions.ScriptCacheBytes (negative = off).
func scriptCacheBytes(mib int) int {
	if mib == 0 {
		return -1
	}
	return mib << 20
}
