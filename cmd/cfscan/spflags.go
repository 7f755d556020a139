package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// spOptions are the flags of cfscan sp.
type spOptions struct {
	scanKey   *btcec.PrivateKey // never printed, logged or sent
	spendKey  *btcec.PublicKey
	labels    []uint32
	servers   listFlag
	peer      string // P2P source of blocks
	rest      string // REST source of blocks
	chain     string
	from, to  int64
	maxFile   int64
	timeout   time.Duration
	transport p2pclient.Transport
	json      bool
}

// labelFlag collects --label values.
type labelFlag []uint32

func (l *labelFlag) String() string { return fmt.Sprint([]uint32(*l)) }
func (l *labelFlag) Set(v string) error {
	m, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return errors.New("want a label number m, 0 to 4294967295")
	}
	*l = append(*l, uint32(m))
	return nil
}

// parseSPFlags parses cfscan sp's flags. Errors about the scan key never
// repeat what was given.
func parseSPFlags(args []string, stderr io.Writer) (*spOptions, error) {
	o := &spOptions{}
	fs := flag.NewFlagSet("cfscan sp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scanKey := fs.String("scan-key", "", "scan private key: 64 hex digits, or @file holding them (never sent to a server)")
	spendPub := fs.String("spend-pub", "", "spend public key, 66 hex digits (compressed)")
	var labels labelFlag
	fs.Var(&labels, "label", "label m to look for besides the change label 0 (repeatable)")
	fs.Var(&o.servers, "server", "tweak server base URL, e.g. http://127.0.0.1:18485 (repeatable: all must agree)")
	fs.StringVar(&o.peer, "peer", "", "P2P peer host:port to fetch matching blocks from (cfindexd, Core, btcd)")
	fs.StringVar(&o.rest, "rest", "", "Bitcoin Core REST base URL to fetch matching blocks from (/rest/block/<hash>.bin)")
	fs.StringVar(&o.chain, "chain", "main", "main, test, testnet4, signet, regtest or simnet (the --peer's network)")
	fs.Int64Var(&o.from, "from", 0, "first height to scan (default: the servers' first indexed height)")
	fs.Int64Var(&o.to, "to", -1, "last height to scan (default: the lowest of the servers' heights)")
	fs.Int64Var(&o.maxFile, "maxfile", 512<<20, "largest tweak-data or filter range file accepted from a server, bytes")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "deadline of each request")
	transport := fs.String("transport", "auto", "--peer's transport: auto, v2 or v1 (as for a scan)")
	fs.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.scanKey, err = loadScanKey(*scanKey); err != nil {
		return nil, err
	}
	pub, err := hex.DecodeString(*spendPub)
	if err != nil || len(pub) != 33 {
		return nil, errors.New("--spend-pub: want 66 hex digits (a compressed public key)")
	}
	if o.spendKey, err = btcec.ParsePubKey(pub); err != nil {
		return nil, fmt.Errorf("--spend-pub: %w", err)
	}
	o.labels = labels
	if len(o.servers) == 0 {
		return nil, errors.New("give at least one --server")
	}
	if (o.peer == "") == (o.rest == "") {
		return nil, errors.New("give one of --peer (blocks over P2P) and --rest (blocks from Core's REST)")
	}
	if o.transport, err = p2pclient.ParseTransport(*transport); err != nil {
		return nil, fmt.Errorf("--transport %q: want auto, v2 or v1", *transport)
	}
	if o.from < 0 || o.from > math.MaxUint32 || o.to > math.MaxUint32 || (o.to >= 0 && o.to < o.from) {
		return nil, fmt.Errorf("bad range --from=%d --to=%d", o.from, o.to)
	}
	if o.maxFile <= 0 || o.timeout <= 0 {
		return nil, errors.New("--maxfile and --timeout must be positive")
	}
	return o, nil
}

// loadScanKey reads the scan private key from 64 hex digits or, for
// "@path", from the file (surrounding white space ignored). Its errors
// never contain the key or the file's contents.
func loadScanKey(v string) (*btcec.PrivateKey, error) {
	const want = "--scan-key: want 64 hex digits or @file holding them"
	if v == "" {
		return nil, errors.New(want)
	}
	if path, ok := strings.CutPrefix(v, "@"); ok {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--scan-key: %w", err)
		}
		if len(raw) > 1024 {
			return nil, fmt.Errorf("--scan-key: %s is not a key file (%d bytes)", path, len(raw))
		}
		v = strings.TrimSpace(string(raw))
	}
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != 32 {
		return nil, errors.New(want)
	}
	var s btcec.ModNScalar
	if overflow := s.SetByteSlice(b); overflow || s.IsZero() {
		return nil, errors.New("--scan-key: not a valid private key (zero or not below the group order)")
	}
	return btcec.PrivKeyFromScalar(&s), nil
}

// runSP is cfscan sp; it returns the exit code: exitDisagree when a server
// serves data its own headers do not commit to, the servers disagree, or
// a block contradicts what they agreed on.
func runSP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseSPFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "cfscan sp:", err)
		}
		return exitUsage
	}
	rep, err := scanSP(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "cfscan sp:", err)
		if errors.Is(err, errSPInconsistent) || errors.Is(err, errSPDisagree) || errors.Is(err, errSPIndexWrong) {
			return exitDisagree
		}
		return exitError
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeSPTable(stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "cfscan sp:", err)
		return exitError
	}
	return exitOK
}
