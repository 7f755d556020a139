// Package pubbench is cfbench's publish benchmark: on the mainnet-shaped
// chain (the cached one, copied; extended with empty blocks so that its
// first 2,000-block range is final), cfindexd's catch-up of the chain,
// then the same store published to a local MinIO (internal/miniotest):
// the publish's wall time and MB/s into the bucket against the
// catch-up's, in the same run.
package pubbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/internal/btcdtest/mainnetchain"
	"github.com/cfindexd/cfindexd/internal/miniotest"
	"github.com/cfindexd/cfindexd/rangefile"
)

// depth is the reorg safety depth of the runs: the smallest cfindexd
// takes, so that few empty blocks make the first range final.
const depth = 6

// bucket is the benchmark's bucket.
const bucket = "cfbench"

// Report is what one run measured.
type Report struct {
	ChainHeight uint32
	RichBlocks  int
	// CatchUp is cfindexd's catch-up of the whole chain from an empty
	// store.
	CatchUp time.Duration
	// Publish is from the publisher's start line to its "manifest
	// published" line, on the store the catch-up built; Objects and Bytes
	// are what the bucket then holds.
	Publish time.Duration
	Objects int
	Bytes   int64
	// Filters are the bytes of the filters objects alone.
	Filters int64
}

// Run is the publish subcommand: flags, the run, the report on stdout.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cfbench publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cache := fs.String("cache", "", "where mainnet-shaped chains are cached (default: the user cache directory's cfindexd-bench); the chain must be there")
	blocks := fs.Int("blocks", 500, "tx-rich blocks of the cached mainnet-shaped chain")
	txs := fs.Int("txs", 2000, "transactions per block of the cached mainnet-shaped chain")
	seed := fs.Int64("walletseed", 1, "wallet seed of the cached mainnet-shaped chain")
	bin := fs.String("cfindexd", "", "a prebuilt cfindexd binary (default: build ./cmd/cfindexd)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cache == "" {
		dir, err := mainnetchain.CacheRoot()
		if err != nil {
			return err
		}
		*cache = dir
	}
	say := func(format string, a ...any) { fmt.Fprintf(stderr, "cfbench: "+format+"\n", a...) }
	rep, err := Measure(ctx, *cache, mainnetchain.Shape{Blocks: *blocks, TxsPerBlock: *txs, Seed: *seed}, *bin, say)
	if err != nil {
		return err
	}
	rep.Print(stdout)
	return nil
}

// ErrNotCached is returned when the chain is not in the cache: this
// benchmark never generates it (an hour; cfbench sync does).
var ErrNotCached = errors.New("pubbench: the mainnet-shaped chain is not cached; run cfbench sync once to generate it")

// Measure runs the benchmark on the cached chain of shape under cache.
func Measure(ctx context.Context, cache string, shape mainnetchain.Shape, bin string, say func(string, ...any)) (Report, error) {
	if !mainnetchain.Cached(cache, shape) {
		return Report{}, ErrNotCached
	}
	work, err := os.MkdirTemp("", "cfbench-publish-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(work)
	if bin == "" {
		say("building cfindexd")
		if bin, err = daemon.Build(ctx, work); err != nil {
			return Report{}, err
		}
	}
	minioBin, err := miniotest.BuildBinary()
	if err != nil {
		return Report{}, err
	}
	node, info, err := chains.StartMainnet(ctx, cache, filepath.Join(work, "btcd"), shape, say)
	if node != nil {
		defer node.Stop()
	}
	if err != nil {
		return Report{}, err
	}
	tip := uint32(rangefile.Size - 1 + depth)
	if info.Height < tip {
		say("extending the copy with %d empty blocks to height %d (the first range final)", tip-info.Height, tip)
		if _, err := node.Generate(ctx, int(tip-info.Height)); err != nil {
			return Report{}, err
		}
	} else {
		tip = info.Height
	}
	rep := Report{ChainHeight: tip, RichBlocks: shape.Blocks}
	dataDir := filepath.Join(work, "cfindexd")
	say("cfindexd catch-up to %d", tip)
	res, err := daemon.Measure(ctx, daemon.Run{Binary: bin, Node: node, DataDir: dataDir, LogPath: filepath.Join(work, "catchup.log"),
		TipHeight: tip, Workers: 8, BatchBlocks: 500, Extra: []string{"--reorgsafetydepth=" + strconv.Itoa(depth)}})
	if err != nil {
		return rep, err
	}
	rep.CatchUp = res.CatchUp

	s3, err := miniotest.Launch(ctx, minioBin, filepath.Join(work, "minio"))
	if err != nil {
		return rep, err
	}
	defer s3.Stop()
	if err := s3.MakeBucket(ctx, bucket, false); err != nil {
		return rep, err
	}
	say("publishing the store to MinIO at %s", s3.Endpoint)
	proc, err := daemon.Start(ctx, daemon.Run{Binary: bin, Node: node, DataDir: dataDir, LogPath: filepath.Join(work, "publish.log"),
		TipHeight: tip, Workers: 8, BatchBlocks: 500, Extra: []string{"--reorgsafetydepth=" + strconv.Itoa(depth),
			"--s3endpoint=" + s3.Endpoint, "--s3bucket=" + bucket, "--s3insecure=true",
			"--s3accesskey=" + miniotest.AccessKey, "--s3secretkey=" + miniotest.SecretKey}})
	if err != nil {
		return rep, err
	}
	defer proc.Kill()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	began, err := proc.WaitFor(wctx, func(l daemon.LogLine) bool { return l.Field("message") == "publishing final ranges to the bucket" })
	if err != nil {
		return rep, err
	}
	done, err := proc.WaitFor(wctx, func(l daemon.LogLine) bool { return l.Field("message") == "manifest published" })
	if err != nil {
		return rep, err
	}
	rep.Publish = done.At().Sub(began.At())
	if _, err := proc.Terminate(daemon.StopLimit); err != nil {
		return rep, err
	}
	for oi := range s3.Client().ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			return rep, oi.Err
		}
		rep.Objects++
		rep.Bytes += oi.Size
		if len(oi.Key) > 8 && oi.Key[:8] == "filters/" {
			rep.Filters += oi.Size
		}
	}
	return rep, nil
}

// Print writes the report.
func (r Report) Print(w io.Writer) {
	mbps := func(b int64, d time.Duration) float64 { return float64(b) / 1e6 / d.Seconds() }
	fmt.Fprintf(w, "chain: mainnet-shaped, %d tx-rich blocks, extended to height %d (one final range)\n", r.RichBlocks, r.ChainHeight)
	fmt.Fprintf(w, "catch-up:  %8.2f s  (%.1f blocks/s; the range's %.1f MB of objects in %.2f MB/s of catch-up)\n",
		r.CatchUp.Seconds(), float64(r.ChainHeight+1)/r.CatchUp.Seconds(), float64(r.Bytes)/1e6, mbps(r.Bytes, r.CatchUp))
	fmt.Fprintf(w, "publish:   %8.2f s  (%d objects, %.1f MB, filters %.1f MB: %.1f MB/s into MinIO)\n",
		r.Publish.Seconds(), r.Objects, float64(r.Bytes)/1e6, float64(r.Filters)/1e6, mbps(r.Bytes, r.Publish))
	fmt.Fprintf(w, "publish / catch-up: %.3f\n", r.Publish.Seconds()/r.CatchUp.Seconds())
}
