// Package pubbench is cfbench's publish benchmark: on the mainnet-shaped
// chain (the cached one, copied; extended with empty blocks so that its
// first 2,000-block range is final), cfindexd's catch-up of the chain,
// then the same store published to a local MinIO (internal/miniotest):
// the publish's wall time and MB/s into the bucket against the
// catch-up's, in the same run.
package pubbench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/finalrange"
	"github.com/cfindexd/cfindexd/internal/miniotest"
)

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
	return finalrange.RunCommand(ctx, "cfbench publish", args, stdout, stderr, Measure)
}

// Measure runs the benchmark on the cached chain o names.
func Measure(ctx context.Context, o finalrange.Options, say func(string, ...any)) (Report, error) {
	minioBin, err := miniotest.BuildBinary()
	if err != nil {
		return Report{}, err
	}
	set, err := finalrange.Prepare(ctx, o, "cfbench-publish-", say)
	if set != nil {
		defer set.Close()
	}
	if err != nil {
		return Report{}, err
	}
	rep := Report{ChainHeight: set.Tip, RichBlocks: o.Shape.Blocks, CatchUp: set.CatchUp}

	s3, err := miniotest.Launch(ctx, minioBin, filepath.Join(set.Work, "minio"))
	if err != nil {
		return rep, err
	}
	defer s3.Stop()
	if err := s3.MakeBucket(ctx, bucket, false); err != nil {
		return rep, err
	}
	say("publishing the store to MinIO at %s", s3.Endpoint)
	proc, err := daemon.Start(ctx, set.Run(set.PrimaryDir, "publish.log",
		"--s3endpoint="+s3.Endpoint, "--s3bucket="+bucket, "--s3insecure=true",
		"--s3accesskey="+miniotest.AccessKey, "--s3secretkey="+miniotest.SecretKey))
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
