package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/hostres"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/netparams"
)

// indexChain runs the daemon with args until it has indexed height, then
// stops it with SIGTERM.
func indexChain(t *testing.T, height int32, args ...string) {
	t.Helper()
	d := startDaemon(t, args...)
	d.waitLog(2*time.Minute, heightAtLeast(float64(height)))
	if code, _ := d.terminate(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// TestReindexRebuildsCorruptStore zeroes both meta pages of a store the
// daemon built from btcd. Started again, the daemon exits 1 with one line
// that says the store is corrupt and names --reindex (no Go panic); with
// --reindex it moves the file aside without opening it, rebuilds the store
// from the node equal to btcd's own index, and keeps exactly one backup
// however often it is run.
func TestReindexRebuildsCorruptStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 71})
	if _, err := node.Generate(ctx, 150); err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	args := nodeArgs(node, "regtest", datadir)
	indexChain(t, 150, args...)

	path := filepath.Join(datadir, "regtest", storeFileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 2*os.Getpagesize()), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	damaged := fileBytesOf(t, path)

	d := startDaemon(t, args...)
	code, last := d.wait(30 * time.Second)
	if code != 1 || !strings.Contains(last, "store is corrupt") || !strings.Contains(last, "cfindexd --reindex") {
		t.Fatalf("start on a corrupt store: exit %d, last line %q", code, last)
	}
	for _, l := range d.log.Lines() {
		if strings.Contains(l, "goroutine ") || strings.HasPrefix(l, "panic:") {
			t.Fatalf("the daemon panicked: %s", l)
		}
	}
	t.Logf("without --reindex: exit %d: %s", code, last)

	for run := 1; run <= 2; run++ {
		d := startDaemon(t, append(args, "--reindex")...)
		d.waitLog(30*time.Second, msgIs("reindex: kept the old store as a backup (delete it once the rebuild is done); rebuilding from the node"))
		d.waitLog(2*time.Minute, heightAtLeast(150))
		if code, _ := d.terminate(30 * time.Second); code != 0 {
			t.Fatalf("--reindex run %d: SIGTERM: exit %d", run, code)
		}
		st := openStoreAfterExit(t, datadir, "regtest", node.Params())
		if err := node.CompareStore(ctx, st, 0); err != nil {
			t.Fatalf("--reindex run %d: %v", run, err)
		}
		st.Close()
		backups, _ := filepath.Glob(path + reindexBackupInfix + "*")
		if len(backups) != 1 {
			t.Fatalf("--reindex run %d: backups %v, want one", run, backups)
		}
		if run == 1 && !bytes.Equal(fileBytesOf(t, backups[0]), damaged) {
			t.Fatal("the backup is not the damaged store")
		}
		time.Sleep(1100 * time.Millisecond) // backups are named to the second
	}
}

func fileBytesOf(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// filtersLeaf finds a leaf page of the store's filters bucket (a child of
// its root branch, the middle one) and returns its offset in the file and
// the heights it holds.
func filtersLeaf(t *testing.T, path string) (offset int64, heights []uint32) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var root uint64
	_ = db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket([]byte("filters")).Root()) // store's schema (store/doc.go)
		return nil
	})
	ps := uint64(db.Info().PageSize)
	db.Close()
	raw := fileBytesOf(t, path)
	ne := binary.NativeEndian
	page := func(id uint64) []byte { return raw[id*ps : (id+1)*ps] }
	const branch, leaf = 0x01, 0x02
	p := page(root)
	if ne.Uint16(p[8:]) != branch {
		t.Fatal("the filters bucket's root is not a branch page; index more blocks")
	}
	n := uint64(ne.Uint16(p[10:]))
	child := ne.Uint64(p[16+(n/2)*16+8:])
	p = page(child)
	if ne.Uint16(p[8:]) != leaf {
		t.Fatal("expected a leaf below the root")
	}
	for i := range uint64(ne.Uint16(p[10:])) {
		e := p[16+i*16:]
		pos, ksize := uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:]))
		heights = append(heights, binary.BigEndian.Uint32(e[pos:pos+ksize]))
	}
	return int64(child * ps), heights
}

// dialP2P connects to a P2P listener as a light client.
func dialP2P(t *testing.T, addr string, params *chaincfg.Params) *p2pclient.Peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := p2pclient.Dial(ctx, addr, p2pclient.Options{Params: params, Services: wire.SFNodeWitness, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// cfilters sends getcfilters(start, stop) to p and collects the cfilter
// messages that arrive within limit, up to want of them.
func cfilters(p *p2pclient.Peer, start uint32, stop chainhash.Hash, want int, limit time.Duration) (map[chainhash.Hash][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := p.Send(ctx, wire.NewMsgGetCFilters(wire.GCSFilterRegular, start, &stop)); err != nil {
		return nil, err
	}
	got := map[chainhash.Hash][]byte{}
	for len(got) < want {
		f, err := p.ReadFrame(ctx)
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		if f.Command != wire.CmdCFilter {
			continue
		}
		var cf wire.MsgCFilter
		if err := cf.BtcDecode(bytes.NewReader(f.Payload), wire.ProtocolVersion, wire.BaseEncoding); err != nil {
			return got, err
		}
		got[cf.BlockHash] = cf.Data
	}
	return got, nil
}

// TestCorruptPageKeepsDaemonUp damages a leaf page of the filters bucket
// of a store the daemon built from btcd (below the top of the tree, so the
// daemon opens it) and starts the daemon on it: an HTTP request for a
// filter on that page gets 500 and an error log line naming --reindex, a
// P2P getcfilters over it gets no answer for the bad range (the request
// fails on our side), and the daemon stays up and serves every block
// elsewhere, equal to btcd's filters.
func TestCorruptPageKeepsDaemonUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 72})
	const blocks = 600 // the filters bucket becomes a root branch over several leaves
	if _, err := node.Generate(ctx, blocks); err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	args := nodeArgs(node, "regtest", datadir)
	indexChain(t, blocks, args...)

	path := filepath.Join(datadir, "regtest", storeFileName)
	off, heights := filtersLeaf(t, path)
	bad := heights[len(heights)/2]
	good := uint32(0)
	if heights[0] == 0 {
		good = blocks
	}
	t.Logf("damaging the leaf at offset %d holding heights %d..%d", off, heights[0], heights[len(heights)-1])
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, os.Getpagesize()), off); err != nil {
		t.Fatal(err)
	}
	f.Close()

	httpAddr, p2pAddr := tcptest.FreeAddr(t), tcptest.FreeAddr(t)
	args = append(withoutFlag(withoutFlag(args, "httplisten"), "listen"), "--httplisten="+httpAddr, "--listen="+p2pAddr)
	d := startDaemon(t, args...)
	base := "http://" + httpAddr
	waitHTTP(t, base+"/healthz", 200, "ok")

	badHash, err := node.BlockHash(ctx, int32(bad))
	if err != nil {
		t.Fatal(err)
	}
	st, _, body := get(t, base+"/rest/blockfilter/basic/"+badHash.String()+".bin", nil)
	if st != 500 || string(body) != "internal error\n" {
		t.Fatalf("filter on the damaged page: %d %q", st, body)
	}
	d.waitLog(10*time.Second, func(m map[string]any) bool {
		e, _ := m["error"].(string)
		return m["level"] == "error" && strings.Contains(e, "store is corrupt") && strings.Contains(e, "cfindexd --reindex")
	})
	checkFilter := func(h uint32) {
		t.Helper()
		hash, err := node.BlockHash(ctx, int32(h))
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := node.FilterOf(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		st, _, body := get(t, base+"/rest/blockfilter/basic/"+hash.String()+".bin", nil)
		if st != 200 || !bytes.Equal(body, coreBlockFilter(hash, want)) {
			t.Fatalf("filter at %d, away from the damage: %d", h, st)
		}
	}
	checkFilter(good)

	// P2P: a range over the damaged page, then a healthy one on a fresh
	// connection.
	c := dialP2P(t, p2pAddr, node.Params())
	stop, err := node.BlockHash(ctx, int32(heights[len(heights)-1]))
	if err != nil {
		t.Fatal(err)
	}
	n := len(heights)
	got, err := cfilters(c, heights[0], stop, n, 5*time.Second)
	if len(got) == n {
		t.Fatalf("getcfilters over the damaged page got all %d filters", n)
	}
	t.Logf("getcfilters over the damaged page: %d of %d filters, then %v", len(got), n, err)
	goodStart := good
	if good == blocks {
		goodStart = blocks - 9
	}
	goodStop, err := node.BlockHash(ctx, int32(goodStart+9))
	if err != nil {
		t.Fatal(err)
	}
	got, err = cfilters(dialP2P(t, p2pAddr, node.Params()), goodStart, goodStop, 10, 30*time.Second)
	if err != nil || len(got) != 10 {
		t.Fatalf("getcfilters away from the damage: %d filters, %v", len(got), err)
	}
	for hash, data := range got {
		want, _, err := node.FilterOf(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) {
			t.Fatalf("cfilter of %s differs from btcd's", hash)
		}
	}
	waitHTTP(t, base+"/healthz", 200, "ok")
	if code, _ := d.terminate(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// TestGuardedPanicIsOneLine: a panic in a daemon goroutine becomes one
// line for main to print and an error log line carrying the stack.
func TestGuardedPanicIsOneLine(t *testing.T) {
	var logs bytes.Buffer
	fn := guarded(zerolog.New(&logs), "indexer", func() error { panic("boom") })
	err := fn()
	if err == nil || err.Error() != "indexer panicked: boom" {
		t.Fatalf("guarded: %v", err)
	}
	if !strings.Contains(logs.String(), `"level":"error"`) || !strings.Contains(logs.String(), "TestGuardedPanicIsOneLine") {
		t.Fatalf("log: %s", logs.String())
	}
	if err := guarded(zerolog.Nop(), "x", func() error { return io.EOF })(); err != io.EOF {
		t.Fatalf("guarded passes errors through: %v", err)
	}
}

func TestTakeReindexFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		rest    []string
		reindex bool
		err     bool
	}{
		{[]string{"--chain=regtest"}, []string{"--chain=regtest"}, false, false},
		{[]string{"--reindex", "--chain=regtest"}, []string{"--chain=regtest"}, true, false},
		{[]string{"-reindex"}, nil, true, false},
		{[]string{"--reindex=false"}, nil, false, false},
		{[]string{"--reindex=yes"}, nil, false, true},
		{[]string{"--", "--reindex"}, []string{"--", "--reindex"}, false, false},
	} {
		rest, reindex, err := takeReindexFlag(tc.args)
		if (err != nil) != tc.err || reindex != tc.reindex || fmt.Sprint(rest) != fmt.Sprint(tc.rest) {
			t.Errorf("%v: %v %v %v", tc.args, rest, reindex, err)
		}
	}
	// A config file or the environment cannot ask for a reindex.
	if _, err := loadConfig([]string{"--reindex"}, envFrom(nil), io.Discard); err == nil {
		t.Error("loadConfig accepts --reindex: it would become a key")
	}
}

// TestFDBudget: the open file limit must cover the caps and the node
// connections (the defaults fit in the usual 1024); a listener that is off
// needs none; maxblockfetches, workers and the mempool mirror raise it.
func TestFDBudget(t *testing.T) {
	cfg := defaultConfig()
	cfg.Listen, cfg.HTTPListen = ":8383", "127.0.0.1:8384"
	need, _, _, node := fdNeed(cfg)
	// The indexer's 16 (Core's rpcthreads, above 2 × 8 workers) + 4, the
	// P2P block source's 4, the peers' client's 2 + 1.
	if node != 16+4+4+2+1 || need != cfg.MaxPeers+cfg.HTTPMaxConns+node+fdFixed {
		t.Fatalf("need %d with %d node connections", need, node)
	}
	if err := fdBudget(cfg, uint64(need)); err != nil {
		t.Fatalf("limit %d: %v", need, err)
	}
	// The defaults run under the common soft limit of 1024.
	if err := fdBudget(cfg, 1024); err != nil {
		t.Fatalf("defaults under ulimit -n 1024: %v", err)
	}
	if err := fdBudget(cfg, uint64(need-1)); err == nil || !strings.Contains(err.Error(), "LimitNOFILE") {
		t.Fatalf("limit %d: %v", need-1, err)
	}
	for _, tc := range []struct {
		name string
		cfg  func(c *Config)
		more int
	}{
		{"maxblockfetches", func(c *Config) { c.MaxBlockFetches += 10 }, 10},
		{"workers beyond the RPC threads", func(c *Config) { c.Workers = 20 }, 40 - 16},
		{"rpcthreads", func(c *Config) { c.RPCThreads = 64 }, 64 - 16},
		{"the mempool mirror", func(c *Config) { c.PeerBloomFilters = true }, 1},
	} {
		c := cfg
		tc.cfg(&c)
		if got, _, _, _ := fdNeed(c); got != need+tc.more {
			t.Errorf("%s: need %d, want %d", tc.name, got, need+tc.more)
		}
	}
	cfg.HTTPListen, cfg.Listen = "", ""
	if err := fdBudget(cfg, uint64(node+fdFixed)); err != nil {
		t.Fatalf("both listeners off: %v", err)
	}
}

// TestSystemdLimitsMatchBudgets keeps the unit's resource limits, and the
// numbers its comments derive them from, equal to what the code computes
// for the defaults with BIP-37 serving on (on 2 cores, as the comments
// say): LimitNOFILE covers twice the connection caps, MemoryMax leaves the
// budgets under the three quarters cfindexd's soft limit may take (with
// room for 64 cores' answer-building slots), no GOMEMLIMIT pins a limit
// the configuration no longer matches, and TasksMax is set.
func TestSystemdLimitsMatchBudgets(t *testing.T) {
	raw, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(raw)
	values := map[string]string{}
	for _, line := range strings.Split(unit, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			values[k] = v
			if k == "Environment" && strings.Contains(v, "GOMEMLIMIT") {
				t.Errorf("the unit sets GOMEMLIMIT (%s): cfindexd derives its limit from its configuration", v)
			}
		}
	}
	nums := func(re string) []int {
		t.Helper()
		var out []int
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(unit, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	mib := func(b int64) int { return int(math.Round(float64(b) / (1 << 20))) }

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	nw, err := netparams.Lookup("main")
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.PeerBloomFilters = true

	// File descriptors.
	var nofile uint64
	if _, err := fmt.Sscan(values["LimitNOFILE"], &nofile); err != nil {
		t.Fatalf("LimitNOFILE %q", values["LimitNOFILE"])
	}
	need, _, _, node := fdNeed(cfg)
	doubled := cfg
	doubled.MaxPeers, doubled.HTTPMaxConns = 2*cfg.MaxPeers, 2*cfg.HTTPMaxConns
	needDoubled, _, _, _ := fdNeed(doubled)
	if err := fdBudget(doubled, nofile); err != nil {
		t.Errorf("LimitNOFILE=%d does not fit twice the default caps: %v", nofile, err)
	}
	if got, want := nums(`\+ (\d+) node connections`), []int{node}; !slices.Equal(got, want) {
		t.Errorf("unit says %v node connections, the code %v", got, want)
	}
	if got, want := nums(`= (\d+); cfindexd refuses`), []int{need}; !slices.Equal(got, want) {
		t.Errorf("unit says %v descriptors, the code %v", got, want)
	}
	if got, want := nums(`httpmaxconns \((\d+)\)`), []int{needDoubled}; !slices.Equal(got, want) {
		t.Errorf("unit says %v for twice the caps, the code %v", got, want)
	}

	// Memory.
	b := memoryBudgetOf(cfg, nw)
	plain := memoryBudgetOf(defaultConfig(), nw)
	if got, want := nums(`(?m)(\d+) MiB$`), []int{mib(b.Indexer), mib(b.P2P), mib(b.HTTP), mib(b.Mempool), mib(b.Base)}; !slices.Equal(got, want) {
		t.Errorf("unit's budgets %v MiB, the code's %v", got, want)
	}
	if got, want := nums(`= (\d+) MiB, reached`), []int{mib(b.total())}; !slices.Equal(got, want) {
		t.Errorf("unit's total %v MiB, the code's %v", got, want)
	}
	if got, want := nums(`\((\d+) MiB without\)`), []int{mib(plain.P2P)}; !slices.Equal(got, want) {
		t.Errorf("unit's P2P bound without BIP-37 %v MiB, the code's %v", got, want)
	}
	var maxMiB int64
	if _, err := fmt.Sscanf(values["MemoryMax"], "%dM", &maxMiB); err != nil {
		t.Fatalf("MemoryMax %q: want <n>M", values["MemoryMax"])
	}
	soft, _ := hostres.CapToCgroup(math.MaxInt64, maxMiB<<20)
	if got, want := nums(`\((\d+) MiB here\)`), []int{mib(soft)}; !slices.Equal(got, want) {
		t.Errorf("unit says the soft limit may take %v MiB of MemoryMax, the code %v", got, want)
	}
	// 64 cores build up to 128 answers at once (512 KiB each), 2 cores 4.
	if many := b.total() + 124*512<<10; many > soft {
		t.Errorf("MemoryMax=%dM: its three quarters (%d MiB) are below the budgets on 64 cores (%d MiB)", maxMiB, soft>>20, many>>20)
	}
	var tasks int
	if _, err := fmt.Sscan(values["TasksMax"], &tasks); err != nil || tasks < 128 {
		t.Errorf("TasksMax %q: want at least 128 (64 cores and the runtime's own)", values["TasksMax"])
	}
}
