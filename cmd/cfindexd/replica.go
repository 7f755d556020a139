package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/replica"
	"github.com/cfindexd/cfindexd/replica/source"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/storecheck"
)

// replicaSourcePoll is how often a replica with no primary reads its
// source's latest again (the layout's mutable objects are cached for 60 s).
const replicaSourcePoll = time.Minute

// runReplicaOn runs a read replica (replicasource, replicaprimary): no
// node link at all. The store opens and the listeners bind first, as for
// any cfindexd; then the published ranges are fetched, checked and stored
// (replica.Bootstrap) before either server starts, so a source that fails
// a check stops the daemon with an error naming the object and nothing is
// ever served from it; then P2P and HTTP serve the store while the
// replica follows its primary (replica.Follower) or, with no primary,
// polls the source for new ranges. With reindex the store is moved aside
// first and bootstrapped afresh.
func runReplicaOn(ctx context.Context, cfg Config, nw netparams.Network, confFile string, log zerolog.Logger, reindex bool) (err error) {
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
	m := metrics.New()
	m.SetBuildInfo(version)
	repair := storecheck.NewRepairer(m, log)
	st, err := store.Open(storePath, *nw.Params.GenesisHash, store.Options{Timeout: time.Second, OnMismatch: repair.OnMismatch})
	if err != nil {
		fresh.remove()
		return err
	}
	defer func() {
		_, indexed := st.Tip()
		st.Close()
		if err != nil && !indexed {
			fresh.remove()
		}
	}()
	lns, err := bindListeners(cfg)
	if err != nil {
		return err
	}
	defer lns.close()
	tip, haveTip := st.Tip()
	build := readBuildVersion()
	ev := log.Info().Str("version", build.Version).Str("commit", build.Commit).Str("chain", nw.Name).Str("store", storePath).
		Uint32("store_height", tip.Height).Bool("store_empty", !haveTip).Str("replicasource", cfg.ReplicaSource).Str("replicaprimary", cfg.ReplicaPrimary)
	if confFile != "" {
		ev = ev.Str("config", confFile)
	}
	ev.Msg("starting as a read replica (no node)")
	if haveTip {
		if hdr, err := st.HeaderAt(tip.Height); err == nil {
			m.SetIndexedTip(tip.Height, hdr.Timestamp)
		}
	}

	link := &replicaLink{status: httpapi.NodeStatus{Address: cfg.ReplicaPrimary, Kind: "cfindexd-primary"}}
	var src *source.Client
	if cfg.ReplicaSource != "" {
		if src, err = source.New(source.Config{BaseURL: cfg.ReplicaSource}); err != nil {
			return fmt.Errorf("replicasource: %w", err)
		}
		if cfg.ReplicaPrimary == "" {
			link.status = httpapi.NodeStatus{Address: cfg.ReplicaSource, Kind: "published-layout"}
		}
		boot := replica.BootstrapConfig{
			Source: src, Store: st, Network: nw,
			OnCommit: func(t store.Tip, at time.Time) { m.SetIndexedTip(t.Height, at) },
			Log:      log.With().Str("component", "replica").Logger(),
		}
		res, err := replica.Bootstrap(ctx, boot)
		if err != nil {
			return fmt.Errorf("replica bootstrap from %s: %w", cfg.ReplicaSource, err)
		}
		if cfg.ReplicaPrimary == "" {
			m.NodeTip(int64(res.Published.End), time.Now())
			m.NodeReachable(nil)
			link.set(nil)
		}
	}

	p2pCfg, err := p2pConfig(cfg, nw, st, m, nil, log)
	if err != nil {
		return fmt.Errorf("p2p: %w", err)
	}
	p2pServer, err := p2p.New(p2pCfg)
	if err != nil {
		return fmt.Errorf("p2p: %w", err)
	}
	maxTipAge, err := readyMaxTipAge(cfg.ReadyMaxTipAge, nw.Name)
	if err != nil {
		return err
	}
	httpServer, err := httpapi.New(httpLimits(cfg, httpapi.Config{
		Net:              nw.Params.Net,
		ReorgSafetyDepth: uint32(cfg.ReorgSafetyDepth),
		ReadyMaxLag:      uint32(cfg.ReadyBlocks),
		ReadyMaxTipAge:   maxTipAge,
		Status: func() httpapi.DaemonStatus {
			return httpapi.DaemonStatus{
				Version: build.Version, Commit: build.Commit, GoVersion: build.GoVersion,
				Started: started, Chain: nw.Name, Node: link.get(),
				Peers: p2pServer.PeerCount(), Transports: transportStatus(p2pServer.TransportStats()),
				StorePath: storePath,
			}
		},
	}), newHTTPView(st), m, log)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}

	g, gctx := errgroup.WithContext(ctx)
	if ln := lns.takeHTTP(); ln != nil {
		g.Go(guarded(log, "http", func() error { return httpServer.Serve(gctx, ln) }))
	}
	if ln := lns.takeP2P(); ln != nil {
		g.Go(guarded(log, "p2p", func() error { return p2pServer.Serve(gctx, ln) }))
	}
	g.Go(guarded(log, "store size reporter", func() error { reportStoreSize(gctx, st, m); return nil }))
	g.Go(guarded(log, "store repair", func() error { repair.Run(gctx, st); return nil }))
	g.Go(guarded(log, "store scrub", func() error { storecheck.Scrub(gctx, st, cfg.ScrubInterval, repair, log); return nil }))
	rlog := log.With().Str("component", "replica").Logger()
	if cfg.ReplicaPrimary != "" {
		f := replica.NewFollower(replica.FollowConfig{
			Primary: cfg.ReplicaPrimary, Store: st, Network: nw,
			PollInterval: cfg.PollInterval, ReorgSafetyDepth: uint32(cfg.ReorgSafetyDepth), AllowDeepReorg: cfg.AllowDeepReorg,
			Observer: linkObserver{m, link}, Log: rlog,
		})
		g.Go(guarded(log, "replica follower", func() error { return f.Run(gctx) }))
	} else {
		g.Go(guarded(log, "replica source poll", func() error {
			pollSource(gctx, src, st, nw, m, link, rlog)
			return nil
		}))
	}
	return g.Wait()
}

// pollSource bootstraps the ranges the source publishes after start,
// every replicaSourcePoll, until ctx ends.
func pollSource(ctx context.Context, src *source.Client, st *store.Store, nw netparams.Network, m *metrics.Metrics, link *replicaLink, log zerolog.Logger) {
	t := time.NewTicker(replicaSourcePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := replica.Bootstrap(ctx, replica.BootstrapConfig{
			Source: src, Store: st, Network: nw, Log: log,
			OnCommit: func(t store.Tip, at time.Time) { m.SetIndexedTip(t.Height, at) },
		})
		if ctx.Err() != nil {
			return
		}
		m.NodeReachable(err)
		link.set(err)
		if err != nil {
			log.Warn().Err(err).Msg("replica: the source's new ranges were refused; serving what is stored")
			continue
		}
		m.NodeTip(int64(res.Published.End), time.Now())
	}
}

// replicaLink is what /status says of a replica's upstream (its primary,
// or its source when it has none).
type replicaLink struct {
	mu     sync.Mutex
	status httpapi.NodeStatus
}

func (l *replicaLink) get() httpapi.NodeStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

func (l *replicaLink) set(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status.Reachable = err == nil
	l.status.Error = ""
	if err != nil {
		l.status.Error = err.Error()
	}
}

// linkObserver is the follower's observer: the metrics, and /status's
// upstream.
type linkObserver struct {
	*metrics.Metrics
	link *replicaLink
}

func (o linkObserver) NodeReachable(err error) {
	o.Metrics.NodeReachable(err)
	o.link.set(err)
}
