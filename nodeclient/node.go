package nodeclient

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"
)

// NodeKind tells Bitcoin Core from btcd.
type NodeKind int

// Node kinds.
const (
	NodeUnknown NodeKind = iota
	NodeCore             // Bitcoin Core (/Satoshi:x.y.z/)
	NodeBtcd             // btcd (answers "version" with btcdjsonrpcapi)
)

// String implements fmt.Stringer.
func (k NodeKind) String() string {
	switch k {
	case NodeCore:
		return "bitcoin-core"
	case NodeBtcd:
		return "btcd"
	}
	return "unknown"
}

// NodeInfo identifies the node software.
type NodeInfo struct {
	Kind NodeKind
	// Version is Core's numeric version (310000 for 31.0.0); 0 for btcd.
	Version int
	// Subversion is the user agent (/Satoshi:31.0.0/) or, for btcd, its
	// JSON-RPC API version.
	Subversion string
}

// CoreMajor returns Core's major version (31 for 310000).
func (n NodeInfo) CoreMajor() int { return n.Version / 10000 }

var satoshiUA = regexp.MustCompile(`/Satoshi:(\d+)\.(\d+)\.(\d+)`)

// GetNodeInfo identifies the node: getnetworkinfo for Core, falling back to
// btcd's "version" extension (btcd does not implement getnetworkinfo).
func (c *Client) GetNodeInfo(ctx context.Context) (NodeInfo, error) {
	info, err := c.getNodeInfo(ctx)
	if err == nil {
		c.kind.Store(int32(info.Kind))
	}
	return info, err
}

func (c *Client) getNodeInfo(ctx context.Context) (NodeInfo, error) {
	var ni struct {
		Version    int    `json:"version"`
		Subversion string `json:"subversion"`
	}
	err := c.Call(ctx, "getnetworkinfo", nil, &ni)
	if err == nil {
		info := NodeInfo{Kind: NodeUnknown, Version: ni.Version, Subversion: ni.Subversion}
		if m := satoshiUA.FindStringSubmatch(ni.Subversion); m != nil {
			info.Kind = NodeCore
			if info.Version == 0 {
				major, _ := strconv.Atoi(m[1])
				minor, _ := strconv.Atoi(m[2])
				patch, _ := strconv.Atoi(m[3])
				info.Version = major*10000 + minor*100 + patch
			}
		}
		return info, nil
	}
	var rpcErr *RPCError
	if !errors.As(err, &rpcErr) || errors.Is(err, ErrWarmup) {
		return NodeInfo{}, err
	}
	var ver map[string]struct {
		VersionString string `json:"versionstring"`
	}
	if verr := c.Call(ctx, "version", nil, &ver); verr == nil {
		if api, ok := ver["btcdjsonrpcapi"]; ok {
			return NodeInfo{Kind: NodeBtcd, Subversion: "btcdjsonrpcapi " + api.VersionString}, nil
		}
	}
	return NodeInfo{Kind: NodeUnknown, Subversion: fmt.Sprintf("getnetworkinfo failed: %v", rpcErr)}, nil
}

// HasTxIndex reports whether getrawtransaction can find confirmed
// transactions. Core says so in getindexinfo (>= 0.21); btcd and older
// nodes are probed with getrawtransaction of the coinbase of block 1 (or
// genesis): a node without an index answers with a message naming it.
func (c *Client) HasTxIndex(ctx context.Context, info NodeInfo) (bool, error) {
	if info.Kind == NodeCore {
		var idx map[string]struct {
			Synced bool `json:"synced"`
		}
		err := c.Call(ctx, "getindexinfo", nil, &idx)
		if err == nil {
			st, ok := idx["txindex"]
			if ok && !st.Synced {
				c.log.Warn().Msg("node's txindex is still building; blocks above its height will fail until it catches up")
			}
			return ok, nil
		}
		if !errors.Is(err, ErrMethodNotFound) {
			return false, err
		}
	}
	// Probe with the tip's coinbase: confirmed, never in a mempool.
	tip, err := c.GetBestBlockHash(ctx)
	if err != nil {
		return false, err
	}
	blk, err := c.GetRawBlock(ctx, tip)
	if err != nil {
		return false, err
	}
	isGenesis := blk.Header.PrevBlock == (chainhash.Hash{})
	_, err = c.GetRawTransactions(ctx, []chainhash.Hash{blk.Transactions[0].TxHash()})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrTxNotFound) || errors.Is(err, ErrMalformed):
		// "The transaction index must be enabled ... (specify --txindex)"
		// or Core's "No such mempool transaction. Use -txindex ...". A
		// node with an index that lacks the genesis coinbase (never
		// indexed) also lands here; only an empty chain can hit that.
		var rpcErr *RPCError
		if errors.As(err, &rpcErr) && !txIndexMissing.MatchString(rpcErr.Message) && isGenesis {
			return true, nil
		}
		return false, nil
	}
	return false, err
}

var txIndexMissing = regexp.MustCompile(`(?i)txindex|transaction index`)

// Uptime returns how long the node's RPC server has been running (the
// uptime RPC of Bitcoin Core and btcd, whole seconds). Its start time,
// now minus the uptime, moves forward when the node restarts. A node
// without the method answers ErrMethodNotFound.
func (c *Client) Uptime(ctx context.Context) (time.Duration, error) {
	var secs int64
	if err := c.Call(ctx, "uptime", nil, &secs); err != nil {
		return 0, err
	}
	if secs < 0 {
		return 0, fmt.Errorf("%w: uptime: %d seconds", ErrMalformed, secs)
	}
	return time.Duration(secs) * time.Second, nil
}

// Host returns the host:port of the node's RPC server this client talks to.
func (c *Client) Host() string { return c.cfg.Host }

// RESTURL is the base URL of the node's REST interface (Config.RESTURL, or
// the RPC address when that is empty); RESTURLConfigured says whether it
// was set explicitly.
func (c *Client) RESTURL() string { return c.restURL }

// RESTURLConfigured reports whether Config.RESTURL was set.
func (c *Client) RESTURLConfigured() bool { return c.cfg.RESTURL != "" }

// Logger is the logger the client was made with, for the helpers that
// work on its behalf (the prevout sources).
func (c *Client) Logger() zerolog.Logger { return c.log }
