// Package replicawire is cfindexd's wiring of the read replica (package
// replica): the replica* keys' checks, the bootstrap from the source
// before the servers start, then the follower of the primary (or the poll
// of the source), and what /status and /readyz say of the replica's
// upstream. It lives apart from cmd/cfindexd's main package to keep that
// within its size.
package replicawire

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/replica"
	"github.com/cfindexd/cfindexd/replica/source"
	"github.com/cfindexd/cfindexd/store"
)

// SourcePoll is how often a replica with no primary reads its source's
// latest again (the layout's mutable objects are cached for 60 s).
const SourcePoll = time.Minute

// Keys are the replica's configuration keys and the daemon keys it uses.
type Keys struct {
	Source, Primary  string
	PollInterval     time.Duration
	ReorgSafetyDepth uint32
	AllowDeepReorg   bool
}

// On reports whether the daemon runs as a replica.
func (k Keys) On() bool { return k.Source != "" || k.Primary != "" }

// mode names the key that makes the daemon a replica, for messages.
func (k Keys) mode() string {
	if k.Source == "" {
		return "replicaprimary"
	}
	return "replicasource"
}

// nodeKeys are the keys that configure the node link, which a replica does
// not have, and what needs a node or publishes.
var nodeKeys = []string{"rpcconnect", "rpcport", "rpcuser", "rpcpassword", "rpccookiefile", "resturl", "prevoutsource",
	"nodep2p", "zmqpubhashblock", "zmqpubrawtx", "zmqpubsequence", "blocksdir", "rpccert", "rpcthreads",
	"relaytx", "peerbloomfilters", "silentpayments", "s3bucket"}

// CheckKeys checks the replica keys; set reports each other key's value
// when it is not its default ("" and false when it is), so that a node
// key beside the replica keys is one line naming both.
func CheckKeys(k Keys, set func(key string) (value string, changed bool)) error {
	if !k.On() {
		return nil
	}
	for _, name := range slices.Clone(nodeKeys) {
		if v, changed := set(name); changed {
			return fmt.Errorf("%s: a read replica has no node, so %s (set to %s) does not apply: remove it, or remove %s to follow a node", k.mode(), name, v, k.mode())
		}
	}
	if k.Source != "" {
		u, err := url.Parse(k.Source)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("replicasource: %q is not an http(s)://host[:port][/path] URL", k.Source)
		}
	}
	if k.Primary != "" {
		if host, port, err := net.SplitHostPort(k.Primary); err != nil || host == "" || port == "" {
			return fmt.Errorf("replicaprimary: %q is not host:port", k.Primary)
		}
	}
	return nil
}

// Replica runs a store's replica: Bootstrap once before the servers start,
// then Run.
type Replica struct {
	k      Keys
	nw     netparams.Network
	st     *store.Store
	m      *metrics.Metrics
	src    *source.Client // nil without replicasource
	status func(httpapi.NodeStatus)
	log    zerolog.Logger
	// upstream is what /status shows as the node: the primary, or the
	// source when there is none.
	upstream httpapi.NodeStatus
}

// New returns the Replica of st for k; status receives what /status
// should show as the node, now and whenever it changes.
func New(k Keys, nw netparams.Network, st *store.Store, m *metrics.Metrics, status func(httpapi.NodeStatus), log zerolog.Logger) (*Replica, error) {
	r := &Replica{k: k, nw: nw, st: st, m: m, status: status, log: log.With().Str("component", "replica").Logger(),
		upstream: httpapi.NodeStatus{Address: k.Primary, Kind: "cfindexd-primary"}}
	if k.Source != "" {
		var err error
		if r.src, err = source.New(source.Config{BaseURL: k.Source}); err != nil {
			return nil, fmt.Errorf("replicasource: %w", err)
		}
		if k.Primary == "" {
			r.upstream = httpapi.NodeStatus{Address: k.Source, Kind: "published-layout"}
		}
	}
	status(r.upstream)
	if tip, ok := st.Tip(); ok {
		if hdr, err := st.HeaderAt(tip.Height); err == nil {
			m.SetIndexedTip(tip.Height, hdr.Timestamp)
		}
	}
	log.Info().Str("replicasource", k.Source).Str("replicaprimary", k.Primary).Msg("running as a read replica (no node)")
	return r, nil
}

// Bootstrap stores every range the source publishes above the store's
// tip, each checked first (replica.Bootstrap); with no source it does
// nothing. Its error names the object at fault.
func (r *Replica) Bootstrap(ctx context.Context) error {
	if r.src == nil {
		return nil
	}
	res, err := r.bootstrap(ctx)
	if err != nil {
		return fmt.Errorf("replica bootstrap from %s: %w", r.k.Source, err)
	}
	if r.k.Primary == "" {
		r.sourceSeen(res, nil)
	}
	return nil
}

func (r *Replica) bootstrap(ctx context.Context) (replica.BootstrapResult, error) {
	return replica.Bootstrap(ctx, replica.BootstrapConfig{
		Source: r.src, Store: r.st, Network: r.nw, Log: r.log,
		OnCommit: func(t store.Tip, at time.Time) { r.m.SetIndexedTip(t.Height, at) },
	})
}

// sourceSeen records a read of the source (with no primary, the source
// is the upstream /readyz compares with).
func (r *Replica) sourceSeen(res replica.BootstrapResult, err error) {
	r.m.NodeReachable(err)
	r.NodeReachable(err)
	if err == nil {
		r.m.NodeTip(int64(res.Published.End), time.Now())
	}
}

// Run follows the primary, or with none polls the source, until ctx ends
// or the follower stops for good (a reorg deeper than reorgsafetydepth, a
// failing store).
func (r *Replica) Run(ctx context.Context) error {
	if r.k.Primary != "" {
		return replica.NewFollower(replica.FollowConfig{
			// BIP-324 v2 to the primary (encrypted between machines), v1
			// with a primary that has v2transport off.
			Primary: r.k.Primary, Store: r.st, Network: r.nw, Transport: p2pclient.TransportAuto,
			PollInterval: r.k.PollInterval, ReorgSafetyDepth: r.k.ReorgSafetyDepth, AllowDeepReorg: r.k.AllowDeepReorg,
			Observer: observer{r}, Log: r.log,
		}).Run(ctx)
	}
	t := time.NewTicker(SourcePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		res, err := r.bootstrap(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			r.log.Warn().Err(err).Msg("replica: the source's new ranges were refused; serving what is stored")
		}
		r.sourceSeen(res, err)
	}
}

// NodeReachable updates what /status shows of the upstream.
func (r *Replica) NodeReachable(err error) {
	r.upstream.Reachable, r.upstream.Error = err == nil, ""
	if err != nil {
		r.upstream.Error = err.Error()
	}
	r.status(r.upstream)
}

// observer is the follower's: the metrics, and /status's upstream.
type observer struct{ r *Replica }

func (o observer) NodeTip(h int64, at time.Time)        { o.r.m.NodeTip(h, at) }
func (o observer) SetIndexedTip(h uint32, at time.Time) { o.r.m.SetIndexedTip(h, at) }
func (o observer) NodeReachable(err error)              { o.r.m.NodeReachable(err); o.r.NodeReachable(err) }
