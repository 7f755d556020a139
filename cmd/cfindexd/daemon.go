package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/cmd/cfindexd/internal/publishwire"
	"github.com/cfindexd/cfindexd/cmd/cfindexd/internal/replicawire"
	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/storecheck"
	"github.com/cfindexd/cfindexd/zmq"
)

// storeFileName is the store's file below <datadir>/<chain>/.
const storeFileName = "cfindexd.db"

// prevoutModes maps the prevoutsource config values to the prevout sources' modes.
func prevoutModes() map[string]string {
	return map[string]string{
		"auto":      "",
		"blocksdir": prevouts.ModeBlocksDir,
		"rest":      prevouts.ModeREST,
		"getblock":  prevouts.ModeGetBlock3,
		"txindex":   prevouts.ModeTxIndex,
	}
}

// runDaemon wires the components and runs them until ctx ends or one fails
// for good. A nil return means a clean shutdown. confFile is the
// configuration file read, for the start line. With reindex the store is
// moved aside first and rebuilt from the node.
func runDaemon(ctx context.Context, cfg Config, confFile string, log zerolog.Logger, reindex bool) error {
	nw, err := netparams.Lookup(cfg.Chain)
	if err != nil {
		return err
	}
	return runDaemonOn(ctx, cfg, nw, confFile, log, reindex)
}

// runDaemonOn is runDaemon on the network nw, which tests may give other
// default ports. Order matters to an operator: the open file limit is
// checked, the store opens and the listeners bind first, so a low limit, a
// locked or corrupt store or a taken port stops cfindexd at once with one
// line; then HTTP, metrics, health and P2P serve what the store holds
// while the node is waited for, checked and followed in the background
// (nodeSupervisor). Every goroutine the daemon owns runs guarded: a panic
// in one is logged and stops the daemon with one line.
func runDaemonOn(ctx context.Context, cfg Config, nw netparams.Network, confFile string, log zerolog.Logger, reindex bool) (err error) {
	started := time.Now()
	if err := checkFDLimit(cfg); err != nil {
		return err
	}
	dir := filepath.Join(cfg.DataDir, nw.Name)
	fresh := missingPaths(cfg.DataDir, dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fresh.remove()
		return fmt.Errorf("create datadir: %w", err)
	}
	storePath := filepath.Join(dir, storeFileName)
	if reindex {
		if err := reindexStore(storePath, time.Now(), log); err != nil {
			fresh.remove()
			return err
		}
	}
	fresh = append(fresh, missingPaths(storePath)...)
	metrics := metrics.New()
	metrics.SetBuildInfo(version)
	repair := storecheck.NewRepairer(metrics, log)
	st, err := store.Open(storePath, *nw.Params.GenesisHash, store.Options{Timeout: time.Second, OnMismatch: repair.OnMismatch})
	if err != nil {
		fresh.remove()
		return err // store.Open names the file
	}
	if cfg.SilentPayments {
		if _, err := st.SilentPayments().Enable(nw.SilentPaymentsStart); err != nil {
			_ = st.Close()
			return fmt.Errorf("silentpayments: %w", err)
		}
		metrics.WatchSilentPayments(func() (uint32, bool) {
			sp, _ := st.SilentPayments().State()
			return sp.IndexedUpTo()
		})
	}
	// A start that fails (a port taken, a node that refuses cfindexd)
	// leaves behind no store it created, as long as nothing was indexed.
	defer func() {
		_, indexed := st.Tip()
		st.Close()
		if err != nil && !indexed {
			fresh.remove()
		}
	}()
	if bf, err := st.ChecksumBackfill(); err == nil && bf.Pending {
		log.Info().Uint32("from_height", bf.Next).Uint32("to_height", bf.End-1).
			Msg("store upgraded in place: storing each filter's checksums in the background; everything is served meanwhile")
	}
	lns, err := bindListeners(cfg)
	if err != nil {
		return err
	}
	defer lns.close()

	tip, haveTip := st.Tip()
	if haveTip {
		metrics.SetIndexedHeight(tip.Height)
	}
	maxTipAge, err := readyMaxTipAge(cfg.ReadyMaxTipAge, nw.Name)
	if err != nil {
		return err
	}
	// A read replica has a link with no node: its upstream is the primary
	// or the source, and the published ranges are stored before the
	// servers start (replicawire).
	link, rep := &nodeLink{current: -1}, (*replicawire.Replica)(nil)
	if k := cfg.replicaKeys(); k.On() {
		if rep, err = replicawire.New(k, nw, st, metrics, link.setStatus, log); err == nil {
			err = rep.Bootstrap(ctx)
		}
	} else {
		link, err = newNodeLink(cfg, nw, metrics, log)
	}
	if err != nil {
		return err
	}
	defer link.close()

	build := readBuildVersion()
	ev := log.Info().Str("version", build.Version).Str("commit", build.Commit).Str("chain", nw.Name).Str("store", storePath).
		Uint32("store_height", tip.Height).Bool("store_empty", !haveTip).Str("node", link.addresses())
	if confFile != "" {
		ev = ev.Str("config", confFile)
	}
	ev.Msg("starting")

	// Peers reach the node through the link: the peers' own client
	// (peerNodeClient) of whichever candidate address answered.
	// A replica's peers get their blocks from its primary, which has them
	// from its node.
	var peerBlocks peerNode = link
	if rep != nil {
		if b := rep.Blocks(); b != nil {
			defer b.Close()
			peerBlocks = b
		}
	}
	p2pCfg, err := p2pConfig(cfg, nw, st, metrics, peerBlocks, log)
	if err != nil {
		return fmt.Errorf("p2p: %w", err)
	}
	mirror, err := newMempoolMirror(cfg, link, log) // BIP-37 (bloomconfig.go)
	if err != nil {
		return fmt.Errorf("mempool mirror: %w", err)
	}
	p2pCfg.Bloom = bloomP2PConfig(cfg, mirror, metrics)
	p2pServer, err := p2p.New(p2pCfg)
	if err != nil {
		return fmt.Errorf("p2p: %w", err)
	}
	httpServer, err := httpapi.New(httpLimits(cfg, httpapi.Config{
		Net:              nw.Params.Net,
		NetName:          nw.Name,
		Genesis:          *nw.Params.GenesisHash,
		ReorgSafetyDepth: uint32(cfg.ReorgSafetyDepth),
		ReadyMaxLag:      uint32(cfg.ReadyBlocks),
		ReadyMaxTipAge:   maxTipAge,
		Status: func() httpapi.DaemonStatus {
			return httpapi.DaemonStatus{
				Version: build.Version, Commit: build.Commit, GoVersion: build.GoVersion,
				Started: started, Chain: nw.Name, Node: link.nodeStatus(),
				Peers: p2pServer.PeerCount(), Transports: transportStatus(p2pServer.TransportStats()),
				StorePath: storePath,
			}
		},
		SilentPayments: newHTTPSPIndex(spIndexOf(cfg, st)),
	}), newHTTPView(st), metrics, log)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}

	g, gctx := errgroup.WithContext(ctx)
	if ln := lns.takeHTTP(); ln != nil {
		g.Go(guarded(log, "http", func() error { return httpServer.Serve(gctx, ln) }))
		g.Go(guarded(log, "manifest catalog", func() error { return httpServer.WarmCatalog(gctx) }))
	} else {
		log.Info().Msg("http disabled (httplisten is empty)")
	}
	if ln := lns.takeP2P(); ln != nil {
		g.Go(guarded(log, "p2p", func() error { return p2pServer.Serve(gctx, ln) }))
	} else {
		log.Info().Msg("P2P server disabled (listen is empty)")
	}
	if k := cfg.s3Keys(); k.On() {
		pub, err := publishwire.New(k, os.Getenv, nw, uint32(cfg.ReorgSafetyDepth),
			publishwire.Chain{Store: st, View: newHTTPView(st), SP: newHTTPSPIndex(spIndexOf(cfg, st))}, metrics, log)
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		g.Go(guarded(log, "publisher", func() error { return pub.Run(gctx) }))
	}
	g.Go(guarded(log, "store size reporter", func() error { reportStoreSize(gctx, st, metrics); return nil }))
	g.Go(guarded(log, "store repair", func() error { repair.Run(gctx, st); return nil }))
	g.Go(guarded(log, "store scrub", func() error { storecheck.Scrub(gctx, st, cfg.ScrubInterval, repair, log); return nil }))
	if mirror != nil {
		g.Go(guarded(log, "mempool mirror", func() error { return mirror.Run(gctx) }))
	}
	if rep != nil {
		g.Go(guarded(log, "replica", func() error { return rep.Run(gctx) }))
		return g.Wait()
	}
	wake := make(chan struct{}, 1)
	if cfg.ZMQPubHashBlock != "" {
		sub, err := zmq.NewSubscriber(zmq.Config{Endpoint: cfg.ZMQPubHashBlock},
			log.With().Str("component", "zmq").Logger())
		if err != nil {
			return fmt.Errorf("zmq: %w", err)
		}
		g.Go(guarded(log, "zmq", func() error { return sub.Run(gctx) }))
		g.Go(guarded(log, "zmq hints", func() error { forwardHints(gctx, sub.Hints(), wake); return nil }))
	}
	nodeP2P, guessed := nodeP2PAddr(cfg, nw)
	sup := &nodeSupervisor{
		cfg: cfg, nw: nw, st: st, link: link, metrics: metrics, wake: wake,
		log:        log,
		watchEvery: watchInterval(cfg.PollInterval),
		srcOpts: prevouts.SourceOptions{
			Force:            prevoutModes()[cfg.PrevoutSource],
			NodeP2P:          nodeP2P,
			NodeP2PGuessed:   guessed,
			P2PNet:           nw.Params.Net,
			ScriptCacheBytes: scriptCacheBytes(cfg.ScriptCache),
			BlocksDir:        cfg.BlocksDir,
			BlocksDirNet:     nw.Params.Net,
			RPCThreads:       cfg.RPCThreads,
		},
		prevouts: &prevoutTotals{metrics: metrics},
		repair:   repair,
	}
	g.Go(guarded(log, "node supervisor", func() error { return sup.run(gctx) }))
	return g.Wait()
}

// checkNodeState logs what the operator should know about the node once at
// start (initial block download, pruning) and refuses to run when the node
// has already pruned blocks the store still needs: no retry could fix that.
func checkNodeState(ctx context.Context, client *nodeclient.Client, st *store.Store, log zerolog.Logger) error {
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
			return nodeclient.Permanent(fmt.Errorf("node has pruned blocks below height %d but the store needs them from height %d: restart the node without -prune (and -reindex), or with a store that already reaches height %d", info.PruneHeight, next, info.PruneHeight))
		}
		log.Info().Uint32("prune_height", info.PruneHeight).Msg("node is pruned; cfindexd needs each new block before the node prunes it")
	}
	return nil
}

// reportStoreSize keeps the store-size gauge current.
func reportStoreSize(ctx context.Context, st *store.Store, m *metrics.Metrics) {
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
func forwardHints(ctx context.Context, hints <-chan zmq.Hint, wake chan<- struct{}) {
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
func nodeP2PAddr(cfg Config, nw netparams.Network) (addr string, guessed bool) {
	if cfg.NodeP2P != "auto" {
		return cfg.NodeP2P, false
	}
	return net.JoinHostPort(cfg.RPCConnect, nw.NodeP2PPort), true
}

// scriptCacheBytes turns the scriptcache key (MiB, 0 = off) into
// SourceOptions.ScriptCacheBytes (negative = off).
func scriptCacheBytes(mib int) int {
	if mib == 0 {
		return -1
	}
	return mib << 20
}
