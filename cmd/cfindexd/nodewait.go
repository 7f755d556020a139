package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/internal/backoff"
	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/nodep2p"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
	"github.com/cfindexd/cfindexd/storecheck"
)

// Backoffs of the node supervisor: a node that may heal (unreachable,
// warming up, cookie not written yet) is retried within seconds; one that
// refuses cfindexd's configuration (credentials, TLS, network) is retried
// slowly, up to minutes, since only an operator can fix it.
const (
	healMinBackoff      = time.Second
	healMaxBackoff      = 30 * time.Second
	permanentMinBackoff = 5 * time.Second
	permanentMaxBackoff = 5 * time.Minute
	// nodeP2PCheckTimeout bounds the start-up check of a configured
	// nodep2p (connect, handshake, one block).
	nodeP2PCheckTimeout = 15 * time.Second
	// restartSlack is how far the node's start time must have moved,
	// beyond what the uptime's whole seconds and the probe's round trip
	// leave uncertain, to count as a restart.
	restartSlack = time.Second
	// probeTimeout bounds one liveness probe of a running node.
	probeTimeout = 10 * time.Second
)

// errNodeRestarted ends a follower run when the node restarted or came
// back after being unreachable: the supervisor detects the prevout source
// again, since the node may have come back with other options.
var errNodeRestarted = errors.New("node restarted")

// nodeSupervisor owns the daemon's relation to its node. It waits for the
// node (serving from the store meanwhile), checks it (network, prevout
// source, pruning, nodep2p), runs the follower while the node answers,
// watches it for restarts, and goes back to waiting when the node stops
// answering or starts refusing cfindexd's configuration.
//
// Errors that cannot heal (nodeclient.IsPermanent) end the daemon only
// before the node has answered once: at start an operator is watching
// and a one-line exit is the clearest report. Later (the node was
// reconfigured while cfindexd runs) they are logged at error level with a
// backoff growing to minutes while the store is still served.
type nodeSupervisor struct {
	cfg        Config
	nw         netparams.Network
	st         *store.Store
	link       *nodeLink
	metrics    *metrics.Metrics
	wake       <-chan struct{}
	log        zerolog.Logger
	watchEvery time.Duration
	srcOpts    prevouts.SourceOptions
	prevouts   *prevoutTotals
	repair     *storecheck.Repairer

	connected bool        // the node has answered once
	picked    string      // the RPC address that answered last
	mode      string      // the prevout mode of the last connection
	nodeStart startWindow // the node's start time at the last connection; zero if it has no uptime RPC
}

// watchInterval is how often a running node is probed for a restart:
// five poll intervals, within 1..10 s.
func watchInterval(poll time.Duration) time.Duration {
	return min(max(5*poll, time.Second), 10*time.Second)
}

// run supervises until ctx ends (nil) or an error no retry can fix ends
// the daemon.
func (s *nodeSupervisor) run(ctx context.Context) error {
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	healing := backoff.New(healMinBackoff, healMaxBackoff, rnd)
	refused := backoff.New(permanentMinBackoff, permanentMaxBackoff, rnd)
	for {
		client, src, err := s.connect(ctx)
		if ctx.Err() != nil {
			closeSource(src)
			return nil
		}
		if err == nil {
			healing.Reset()
			refused.Reset()
			err = s.follow(ctx, client, src)
			closeSource(src)
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, errNodeRestarted):
				continue
			case err == nil:
				continue
			case !nodeclient.IsPermanent(err) && !errors.Is(err, nodeclient.ErrUnreachable):
				// The store failed, or the node's chain no longer
				// matches the store: not the node supervisor's to heal.
				return err
			}
		}
		s.link.down(err)
		var wait time.Duration
		if nodeclient.IsPermanent(err) {
			if !s.connected {
				return err
			}
			wait = refused.Next()
			s.log.Error().Err(err).Str("retry_in", logDur(wait)).Msg("the node refuses cfindexd's configuration; serving what the store holds and retrying")
		} else {
			wait = healing.Next()
			s.log.Warn().Err(err).Str("retry_in", logDur(wait)).Msg("waiting for the node")
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// connect finds the node on its candidate addresses, checks its network,
// detects the prevout source (or checks the forced one), refuses a node
// that pruned what the store still needs and a configured nodep2p that is
// not the node, and records what it found for /status.
func (s *nodeSupervisor) connect(ctx context.Context) (*nodeclient.Client, prevouts.BlockSource, error) {
	client, cand, err := s.link.pick(ctx, *s.nw.Params.GenesisHash)
	if errors.Is(err, nodeclient.ErrUnreachable) && !s.connected {
		err = s.link.p2pInsteadOfRPC(ctx, s.nw.Params, err)
	}
	if ctx.Err() != nil {
		return nil, nil, nil
	}
	if client != nil {
		s.link.use(client)
		if cand.Addr != s.picked && len(s.link.candidates) > 1 {
			s.log.Info().Str("node", cand.Addr).Str("port", cand.Label).Msg("node answers")
		}
		s.picked = cand.Addr
	}
	if errors.Is(err, nodeclient.ErrWrongNetwork) {
		return nil, nil, fmt.Errorf("%w: node at %s is %s, but cfindexd follows %s: point rpcconnect/rpcport at a %s node, or set chain", nodeclient.ErrWrongNetwork, cand.Addr, s.nodeNetwork(ctx, client), s.nw.Name, s.nw.Name)
	}
	if err != nil {
		return nil, nil, err
	}
	info, err := client.GetNodeInfo(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("detect node: %w", err)
	}
	src, err := prevouts.DetectSource(ctx, client, s.log.With().Str("component", "node").Logger(), s.srcOpts)
	if err != nil {
		return nil, nil, err
	}
	if err := checkNodeState(ctx, client, s.st, s.log); err != nil {
		closeSource(src)
		return nil, nil, err
	}
	if err := s.checkNodeP2P(ctx, client, src); err != nil {
		closeSource(src)
		return nil, nil, err
	}
	s.nodeStart = startWindow{}
	if start, err := s.probe(ctx, client); err == nil {
		s.nodeStart = start
	}
	if s.mode != "" && s.mode != src.Mode() {
		s.log.Info().Str("from", s.mode).Str("to", src.Mode()).Msg("prevout source changed")
	}
	s.mode = src.Mode()
	if s.connected {
		s.log.Info().Str("node", client.Host()).Str("mode", s.mode).Msg("node is back; following it again")
	}
	s.connected = true
	s.link.up(info, s.mode)
	s.prevouts.use(src)
	return client, src, nil
}

// nodeNetwork names the network a node is on from its genesis block, for
// the wrong-network line.
func (s *nodeSupervisor) nodeNetwork(ctx context.Context, client *nodeclient.Client) string {
	if client == nil {
		return "on another network"
	}
	genesis, err := client.GetBlockHash(ctx, 0)
	if err != nil {
		return "on another network"
	}
	for _, nw := range netparams.All() {
		if *nw.Params.GenesisHash == genesis {
			return "on " + nw.Name
		}
	}
	return "on an unknown network (genesis " + genesis.String() + ")"
}

// checkNodeP2P checks a configured nodep2p once the txindex source (the
// only one that uses it) is chosen: an address that answers as something
// else than the node's P2P port is a configuration error; one that does
// not answer is logged, and blocks come over JSON-RPC until it does.
func (s *nodeSupervisor) checkNodeP2P(ctx context.Context, client *nodeclient.Client, src prevouts.BlockSource) error {
	if s.srcOpts.NodeP2P == "" || s.srcOpts.NodeP2PGuessed || src.Mode() != prevouts.ModeTxIndex {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, nodeP2PCheckTimeout)
	defer cancel()
	err := nodep2p.CheckNodeP2P(cctx, s.srcOpts.NodeP2P, s.srcOpts.P2PNet, client.IdentifyingBlock)
	switch {
	case err == nil, ctx.Err() != nil:
		return nil
	case errors.Is(err, nodep2p.ErrNotTheNode):
		return nodeclient.Permanent(fmt.Errorf("%w: set nodep2p to the node's P2P address (btcd's --listen), or to \"\" for JSON-RPC only", err))
	}
	s.log.Warn().Err(err).Str("nodep2p", s.srcOpts.NodeP2P).Msg("nodep2p does not answer; fetching blocks over JSON-RPC until it does")
	return nil
}

// follow runs the follower against the node until the node restarts,
// stops answering for good, refuses cfindexd, or ctx ends.
func (s *nodeSupervisor) follow(ctx context.Context, client *nodeclient.Client, src prevouts.BlockSource) error {
	follower := indexer.NewFollower(indexer.Config{
		Genesis:      *s.nw.Params.GenesisHash,
		Workers:      s.cfg.Workers,
		BatchBlocks:  s.cfg.BatchBlocks,
		PollInterval: s.cfg.PollInterval,
		// Reorg safety (reorgready.go).
		ReorgSafetyDepth: uint32(s.cfg.ReorgSafetyDepth),
		AllowDeepReorg:   s.cfg.AllowDeepReorg,
		ReorgSettle:      reorgSettle(s.cfg.ReorgSettle),
		SilentPayments:   s.silentPayments(),
	}, client, src, s.st, s.wake, s.metrics, s.log.With().Str("component", "indexer").Logger())
	s.repair.Attach(follower.RebuildBlock)
	defer s.repair.Attach(nil)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(guarded(s.log, "indexer", func() error { return follower.Run(gctx) }))
	g.Go(guarded(s.log, "node watch", func() error { return s.watch(gctx, client) }))
	if x := s.silentPayments(); x != nil {
		backfill := indexer.NewSPBackfill(x, s.st, src, s.cfg.Workers, s.metrics, s.log.With().Str("component", "sp-backfill").Logger())
		g.Go(guarded(s.log, "silent-payment backfill", func() error { return backfill.Run(gctx) }))
	}
	return g.Wait()
}

// silentPayments returns the store's silent-payment index when the
// silentpayments key turned it on (daemon.go enabled it), else nil.
func (s *nodeSupervisor) silentPayments() *spindex.Index {
	if !s.cfg.SilentPayments {
		return nil
	}
	return s.st.SilentPayments()
}

// watch probes the running node every watchEvery: a node whose start time
// moved (it restarted), or that answers again after failing, ends the run
// with errNodeRestarted so that its options are detected again; a node
// that now refuses cfindexd's configuration ends it with that error.
func (s *nodeSupervisor) watch(ctx context.Context, client *nodeclient.Client) error {
	t := time.NewTicker(s.watchEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		start, err := s.probe(pctx, client)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && nodeclient.IsPermanent(err):
			return err
		case err != nil:
			if !failing {
				s.log.Warn().Err(err).Msg("node stopped answering; serving what the store holds until it is back")
			}
			failing = true
			s.link.down(err)
			continue
		case failing:
			s.log.Info().Msg("node answers again; checking it")
			return errNodeRestarted
		case start.after(s.nodeStart):
			s.log.Info().Time("node_started", start.latest).Msg("node restarted; checking its options again")
			return errNodeRestarted
		}
		s.link.reachable()
	}
}

// probe asks the node for its uptime (when it started), or, for a node
// without that RPC, only whether it answers (a zero window).
func (s *nodeSupervisor) probe(ctx context.Context, client *nodeclient.Client) (startWindow, error) {
	before := time.Now()
	up, err := client.Uptime(ctx)
	if err == nil {
		return nodeStartWindow(before, time.Now(), up), nil
	}
	if errors.Is(err, nodeclient.ErrMethodNotFound) {
		_, err = client.GetBestBlockHash(ctx)
	}
	return startWindow{}, err
}

// startWindow bounds when the node started, from one uptime probe.
type startWindow struct{ earliest, latest time.Time }

// nodeStartWindow is when a node that answered uptime (whole seconds,
// measured somewhere between before and after) started: a slow round
// trip widens the window instead of moving it.
func nodeStartWindow(before, after time.Time, uptime time.Duration) startWindow {
	return startWindow{earliest: before.Add(-uptime - time.Second), latest: after.Add(-uptime)}
}

// after reports whether w started certainly later than prev (the node
// restarted in between); false when either is unknown.
func (w startWindow) after(prev startWindow) bool {
	if w.earliest.IsZero() || prev.latest.IsZero() {
		return false
	}
	return w.earliest.Sub(prev.latest) > restartSlack
}

// closeSource releases a source's connections (the txindex source's P2P
// pool); nil is fine.
func closeSource(src prevouts.BlockSource) {
	if closer, ok := src.(io.Closer); ok {
		_ = closer.Close()
	}
}

// prevoutTotals keeps cfindexd_prevouts_resolved_total monotonic across
// the sources the daemon uses in turn: the counts of sources it left
// behind plus those of the current one. The metrics export 0 until the
// first source that counts (txindex) is used.
type prevoutTotals struct {
	metrics *metrics.Metrics

	mu                  sync.Mutex
	registered          bool
	baseCache, baseNode uint64
	current             prevouts.PrevoutCounter
}

// use makes src the current source.
func (p *prevoutTotals) use(src prevouts.BlockSource) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current != nil {
		c, n := p.current.PrevoutCounts()
		p.baseCache, p.baseNode = p.baseCache+c, p.baseNode+n
		p.current = nil
	}
	counted, ok := src.(prevouts.PrevoutCounter)
	if !ok {
		return
	}
	p.current = counted
	if !p.registered {
		p.registered = true
		p.metrics.WatchPrevouts(p.counts)
	}
}

// counts is the total over every source used.
func (p *prevoutTotals) counts() (fromCache, fromNode uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fromCache, fromNode = p.baseCache, p.baseNode
	if p.current != nil {
		c, n := p.current.PrevoutCounts()
		fromCache, fromNode = fromCache+c, fromNode+n
	}
	return fromCache, fromNode
}
