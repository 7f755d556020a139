package prevouts

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/blockfiles"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// restClient serves c's /rest/block and /rest/spenttxouts bodies and
// returns a client of that server.
func restClient(b *testing.B, c *corefiles.Chain) *nodeclient.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSuffix(r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:], ".bin")
		h, err := chainhash.NewHashFromStr(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		switch {
		case strings.HasPrefix(r.URL.Path, "/rest/block/"):
			w.Write(c.Raw[*h])
		case strings.HasPrefix(r.URL.Path, "/rest/spenttxouts/"):
			w.Write(c.Spent[*h])
		default:
			http.NotFound(w, r)
		}
	}))
	b.Cleanup(srv.Close)
	cl, err := nodeclient.NewClient(nodeclient.Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p"}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	return cl
}

// BenchmarkBlocksDirSource reads every block of a chain with its spent
// scripts, in runs of 16 as the indexer does, from Core's files
// (blocksdir) and over REST block + spenttxouts (rest, served from memory
// by an in-process server, so the node's own cost is not counted): on the
// recorded fixture (204 small blocks) and on a written chain of larger
// blocks. Reports blocks/s and MB/s of block data.
func BenchmarkBlocksDirSource(b *testing.B) {
	chains := map[string]func(*testing.B) *corefiles.Chain{
		"fixture": func(b *testing.B) *corefiles.Chain { return corefiles.FixtureChain(b) },
		"written-2000tx": func(b *testing.B) *corefiles.Chain {
			return corefiles.SyntheticChain(b, 0, 60, 2000, corefiles.Options{Key: [8]byte{9, 8, 7, 6, 5, 4, 3, 2}})
		},
	}
	for _, name := range []string{"fixture", "written-2000tx"} {
		var chain *corefiles.Chain
		parent := b // the chain's temporary files live as long as the parent
		load := func(*testing.B) *corefiles.Chain {
			if chain == nil {
				chain = chains[name](parent)
			}
			return chain
		}
		b.Run(name+"/blocksdir", func(b *testing.B) {
			c := load(b)
			dir, err := blockfiles.Open(c.Dir, chaincfg.RegressionNetParams.Net, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			src := NewBlocksDirSource(dir, nil, zerolog.Nop())
			runBench(b, c, func(ctx context.Context, run []chainhash.Hash) (int, error) {
				got, err := src.FetchBlocks(ctx, run, nil)
				return len(got), err
			})
		})
		b.Run(name+"/rest", func(b *testing.B) {
			c := load(b)
			src := &restSource{c: restClient(b, c)}
			runBench(b, c, func(ctx context.Context, run []chainhash.Hash) (int, error) {
				for _, h := range run {
					if _, _, err := src.FetchBlock(ctx, h); err != nil {
						return 0, err
					}
				}
				return len(run), nil
			})
		})
	}
}

// runBench fetches the chain in runs of 16 with fetch, which returns how
// many blocks of the run it fetched (a source may return the first blocks
// only; the rest is asked for next, as the indexer does).
func runBench(b *testing.B, c *corefiles.Chain, fetch func(context.Context, []chainhash.Hash) (int, error)) {
	ctx := context.Background()
	runtime.GC()
	cpu0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		for i := 0; i < len(c.Hashes); i += 16 {
			for run := c.Hashes[i:min(i+16, len(c.Hashes))]; len(run) > 0; {
				n, err := fetch(ctx, run)
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					b.Fatal("no block fetched")
				}
				run = run[n:]
			}
		}
	}
	secs := b.Elapsed().Seconds()
	cpu := (processCPU() - cpu0).Seconds()
	// CPU time of the whole process (the in-process REST server's too):
	// on a shared machine wall time says little, CPU per block more.
	b.ReportMetric(cpu*1e3/float64(b.N*len(c.Hashes)), "cpu-ms/block")
	b.ReportMetric(float64(b.N*len(c.Hashes))/secs, "blocks/s")
	b.ReportMetric(float64(int64(b.N)*c.Bytes)/secs/1e6, "MB/s")
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBlocksDirVsTxIndexP2P runs the blocks-dir source and the
// txindex source with raw blocks over btcd's P2P port (a fresh source,
// so a cold script cache, per pass) over the same tx-rich chain: btcd
// holds it and serves the txindex source; the corefiles writer lays it out
// as Core's files for the blocks-dir source. Runs of 16, one worker.
// Reports blocks/s, cfindexd's CPU per block and btcd's (from /proc).
// The blocks are small (about 15 transactions); cmd/cfbench measures
// mainnet-shaped ones.
func BenchmarkBlocksDirVsTxIndexP2P(b *testing.B) {
	ctx := context.Background()
	n := btcdtest.Start(b, btcdtest.Options{TxIndex: true})
	if err := btcdtest.BuildTxRichChain(ctx, n, n.Wallet(), 150); err != nil {
		b.Fatal(err)
	}
	_, best, err := n.BestBlock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	c := &corefiles.Chain{Dir: b.TempDir()}
	w, err := corefiles.NewWriter(c.Dir, n.Params(), corefiles.Options{Key: [8]byte{7}})
	if err != nil {
		b.Fatal(err)
	}
	for h := int32(0); h <= best; h++ {
		hash, err := n.BlockHash(ctx, h)
		if err != nil {
			b.Fatal(err)
		}
		blk, err := n.Block(ctx, hash)
		if err != nil {
			b.Fatal(err)
		}
		if err := w.AddBlock(blk); err != nil {
			b.Fatal(err)
		}
		if h > 0 {
			c.Hashes = append(c.Hashes, hash)
			c.Bytes += int64(blk.SerializeSize())
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	client, err := nodeclient.NewClient(nodeclient.Config{Host: n.RPCHost(), User: n.User(), Password: n.Password(), Timeout: 10 * time.Second}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()

	nodeCPU := func() time.Duration { return procCPU(n.PID()) }
	b.Run("blocksdir", func(b *testing.B) {
		dir, err := blockfiles.Open(c.Dir, n.Params().Net, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		src := NewBlocksDirSource(dir, nil, zerolog.Nop())
		node0 := nodeCPU()
		runBench(b, c, func(ctx context.Context, run []chainhash.Hash) (int, error) {
			got, err := src.FetchBlocks(ctx, run, nil)
			return len(got), err
		})
		b.ReportMetric((nodeCPU()-node0).Seconds()*1e3/float64(b.N*len(c.Hashes)), "node-cpu-ms/block")
	})
	b.Run("txindex-p2p", func(b *testing.B) {
		var src *txIndexSource
		node0 := nodeCPU()
		runBench(b, c, func(ctx context.Context, run []chainhash.Hash) (int, error) {
			if run[0] == c.Hashes[0] {
				if src != nil {
					src.Close()
				}
				s, err := NewSource(client, ModeTxIndex, SourceOptions{NodeP2P: n.P2PAddr(), P2PNet: n.Params().Net})
				if err != nil {
					return 0, err
				}
				src = s.(*txIndexSource)
			}
			got, err := src.FetchBlocks(ctx, run, nil)
			return len(got), err
		})
		b.ReportMetric((nodeCPU()-node0).Seconds()*1e3/float64(b.N*len(c.Hashes)), "node-cpu-ms/block")
		if src != nil {
			src.Close()
		}
	})
}

// procCPU returns the user and system CPU time of process pid from
// /proc/<pid>/stat (clock ticks of 10 ms), or 0 where there is no /proc.
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
