package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitDisagree = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// options are cfscan's parsed flags.
type options struct {
	chain      string
	peers      listFlag
	bloomPeer  string
	addresses  listFlag
	scripts    listFlag
	start      int64
	end        int64
	method     string
	fpr        float64
	noise      float64
	rotate     uint
	minElems   int
	bloomFlags string
	seed       string
	witness    bool
	timeout    time.Duration
	transport  p2pclient.Transport
	json       bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("cfscan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.chain, "chain", "main", "main, test, testnet4, signet, regtest or simnet")
	fs.Var(&o.peers, "peer", "BIP-157 peer host:port (cfindexd); give two to cross-check filter headers")
	fs.StringVar(&o.bloomPeer, "bloompeer", "", "BIP-37 peer host:port (default: the first --peer)")
	fs.Var(&o.addresses, "address", "address to watch (repeatable, or comma-separated)")
	fs.Var(&o.scripts, "script", "output script to watch, hex (repeatable)")
	fs.Int64Var(&o.start, "start", 0, "first height to scan")
	fs.Int64Var(&o.end, "end", -1, "last height to scan (default: the peer's tip)")
	fs.StringVar(&o.method, "method", "auto", "bip158, bip37, both, or auto: both when the BIP-37 peer serves Bloom filters (NODE_BLOOM, which cfindexd serves only with peerbloomfilters), else bip158 with a note")
	fs.Float64Var(&o.fpr, "fpr", bloom.DefaultFPR, "BIP-37 filter's target false-positive rate")
	fs.Float64Var(&o.noise, "noise", bloom.DefaultNoise, "BIP-37 noise: extra random elements as a fraction of the wallet's")
	fs.IntVar(&o.minElems, "minelements", bloom.DefaultMinElements, "BIP-37: size the filter for at least this many elements (room for the outpoints BLOOM_UPDATE_ALL adds)")
	fs.UintVar(&o.rotate, "rotate", bloom.DefaultRotationInterval, "BIP-37: load a new filter (tweak and noise) every this many blocks")
	fs.StringVar(&o.bloomFlags, "bloomflags", "all", "BIP-37 update mode: all, none or p2pubkeyonly")
	fs.StringVar(&o.seed, "seed", "", "BIP-37 rotation key, 64 hex digits (default: random; set it to reproduce a scan)")
	fs.BoolVar(&o.witness, "witnessfiltered", false, "ask for MSG_FILTERED_WITNESS_BLOCK (btcd) instead of MSG_FILTERED_BLOCK (Core serves only the latter)")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "deadline of each request to a peer")
	transport := fs.String("transport", "auto", "auto: BIP-324 v2 (encrypted), connecting again over v1 when the peer hangs up on v2; v2: v2 only; v1: plaintext only")
	fs.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.transport, err = p2pclient.ParseTransport(*transport); err != nil {
		return nil, fmt.Errorf("--transport %q: want auto, v2 or v1", *transport)
	}
	switch o.method {
	case "bip158", "bip37", "both", "auto":
	default:
		return nil, fmt.Errorf("--method %q: want bip158, bip37, both or auto", o.method)
	}
	if len(o.peers) == 0 && (o.method != "bip37" || o.bloomPeer == "") {
		return nil, errors.New("give --peer (and --bloompeer for a BIP-37-only peer)")
	}
	if len(o.peers) > 2 {
		return nil, errors.New("at most two --peer")
	}
	if o.start < 0 || o.start > math.MaxUint32 || o.end > math.MaxUint32 || (o.end >= 0 && o.end < o.start) {
		return nil, fmt.Errorf("bad range --start=%d --end=%d", o.start, o.end)
	}
	if !(o.fpr > 0 && o.fpr < 1) || o.noise < 0 || math.IsNaN(o.noise) || o.minElems < 0 || o.rotate == 0 || o.rotate > math.MaxUint32 || o.timeout <= 0 {
		return nil, errors.New("--fpr must be in (0,1), --noise ≥ 0, --minelements ≥ 0, --rotate ≥ 1, --timeout > 0")
	}
	return o, nil
}

// run is cfscan; it returns the exit code. "cfscan sp ..." scans for
// silent payments (runSP).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "sp" {
		return runSP(ctx, args[1:], stdout, stderr)
	}
	o, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "cfscan:", err)
		}
		return exitUsage
	}
	rep, err := scan(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "cfscan:", err)
		return exitError
	}
	if o.json {
		err = writeJSON(stdout, rep)
	} else {
		err = writeTable(stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "cfscan:", err)
		return exitError
	}
	if rep.Agree != nil && !*rep.Agree {
		return exitDisagree
	}
	return exitOK
}

// scan connects, syncs headers and runs the methods; with --method=auto
// it writes to notes why it skips BIP-37.
func scan(ctx context.Context, o *options, notes io.Writer) (*scanReport, error) {
	params, err := lookupChain(o.chain)
	if err != nil {
		return nil, err
	}
	w, err := parseWatchlist(params, o.addresses, o.scripts)
	if err != nil {
		return nil, err
	}
	flags, err := parseBloomFlags(o.bloomFlags)
	if err != nil {
		return nil, err
	}
	rot := bloom.Rotation{Interval: uint32(o.rotate)}
	if o.seed != "" {
		k, err := hex.DecodeString(o.seed)
		if err != nil || len(k) != len(rot.Key) {
			return nil, fmt.Errorf("--seed: want %d hex digits", 2*len(rot.Key))
		}
		copy(rot.Key[:], k)
	} else if _, err := rand.Read(rot.Key[:]); err != nil {
		return nil, err
	}
	runBIP158, runBIP37 := o.method != "bip37", o.method != "bip158"
	transports := map[string]string{}
	dial := func(addr string, need wire.ServiceFlag) (*p2pclient.Peer, error) {
		p, err := p2pclient.Dial(ctx, addr, p2pclient.Options{Params: params, Services: wire.SFNodeWitness, Require: need, Timeout: o.timeout, Transport: o.transport})
		if err != nil {
			return nil, err
		}
		transports[addr] = p.Transport().String()
		if o.transport == p2pclient.TransportAuto && p.Transport() == p2pclient.TransportV1 && p.Version().Services&wire.SFNodeP2PV2 != 0 {
			fmt.Fprintf(notes, "cfscan: %s advertises BIP-324 v2 but hung up on our v2 handshake (a handshake rate limit, or someone on the path): scanning over plaintext v1; --transport=v2 insists on v2\n", addr)
		}
		return p, nil
	}

	var cfPeers []*p2pclient.Peer
	defer func() {
		for _, p := range cfPeers {
			p.Close()
		}
	}()
	if runBIP158 {
		for _, addr := range o.peers {
			p, err := dial(addr, wire.SFNodeCF)
			if errors.Is(err, p2pclient.ErrMissingServices) && o.method != "bip158" {
				return nil, fmt.Errorf("%w: it serves no BIP-157 compact filters; --method=bip37 scans with Bloom filters only", err)
			}
			if err != nil {
				return nil, err
			}
			cfPeers = append(cfPeers, p)
		}
	}
	var bloomPeer *p2pclient.Peer
	bloomAddr := o.bloomPeer
	if bloomAddr == "" && len(o.peers) > 0 {
		bloomAddr = o.peers[0]
	}
	if runBIP37 {
		bloomPeer, err = dial(bloomAddr, wire.SFNodeBloom)
		switch {
		case errors.Is(err, p2pclient.ErrMissingServices) && o.method == "auto":
			fmt.Fprintf(notes, "cfscan: %s serves no BIP-37 Bloom filters (NODE_BLOOM; cfindexd serves them with peerbloomfilters = 1): scanning with BIP-158 only; --bloompeer names a peer that does\n", bloomAddr)
			runBIP37 = false
		case errors.Is(err, p2pclient.ErrMissingServices) && runBIP158:
			return nil, fmt.Errorf("%w: %s serves no BIP-37 Bloom filters (NODE_BLOOM); --method=bip158 scans with compact filters only, --bloompeer names a peer that serves Bloom filters", err, bloomAddr)
		case err != nil:
			return nil, err
		default:
			defer bloomPeer.Close()
		}
	}

	headerPeer, headerAddr := bloomPeer, bloomAddr
	if runBIP158 {
		headerPeer, headerAddr = cfPeers[0], o.peers[0]
	}
	before := headerPeer.BytesRead()
	chain, err := syncHeaders(ctx, headerPeer, params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", headerAddr, err)
	}
	rep := &scanReport{Chain: params.Name, Tip: chain.tip(), HeadersPeer: headerAddr, HeadersBytes: headerPeer.BytesRead() - before, Transports: transports}
	end := chain.tip()
	if o.end >= 0 {
		end = uint32(o.end)
	}
	if uint64(o.start) > uint64(chain.tip()) || end > chain.tip() {
		return nil, fmt.Errorf("range %d–%d is beyond the peer's tip %d", o.start, end, chain.tip())
	}
	rep.Start, rep.End = uint32(o.start), end
	for _, it := range w.items {
		rep.Watched = append(rep.Watched, watchedJSON{Address: it.Address, Script: hex.EncodeToString(it.Script)})
	}

	if runBIP158 {
		names := slices.Clone([]string(o.peers))
		m, err := scanBIP158(ctx, cfPeers, names, chain, rep.Start, end, w.clone())
		if err != nil {
			return nil, fmt.Errorf("BIP-158: %w", err)
		}
		rep.Methods = append(rep.Methods, m)
	}
	if runBIP37 {
		pol := bloom.Privacy{FPR: o.fpr, Noise: o.noise, Flags: flags, MinElements: o.minElems}
		m, err := scanBIP37(ctx, bloomPeer, bloomAddr, chain, rep.Start, end, w.clone(), pol, rot, o.witness)
		if err != nil {
			return nil, fmt.Errorf("BIP-37: %w", err)
		}
		rep.Methods = append(rep.Methods, m)
	}
	for _, m := range rep.Methods {
		sortMatches(m.Matches)
	}
	if len(rep.Methods) == 2 {
		agree := slices.Equal(rep.Methods[0].Matches, rep.Methods[1].Matches)
		rep.Agree = &agree
	}
	return rep, nil
}
