// Package replbench is cfbench's replica benchmark: on the mainnet-shaped
// chain (the cached one, copied; extended with empty blocks so that its
// first 2,000-block range is final), a primary cfindexd's catch-up of the
// chain from its node, then a read replica with no node bootstrapped from
// the primary's HTTP (the published layout's routes: every object fetched,
// hashed and checked, headers' proof of work and difficulty, the
// filter-header chain) and brought to the tip over P2P from the primary,
// in the same run: the replica's bootstrap and time to the tip against the
// primary's catch-up.
package replbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/finalrange"
)

// Report is what one run measured.
type Report struct {
	ChainHeight uint32
	RichBlocks  int
	// CatchUp is the primary's catch-up of the whole chain from its node,
	// from an empty store.
	CatchUp time.Duration
	// Bootstrap is from the replica's first line after its store opened
	// ("running as a read replica") to its "replica
	// bootstrap: done" line (the final ranges fetched, checked, stored);
	// ToTip is from the start line until its /status shows the chain's
	// tip (the rest followed over P2P from the primary).
	Bootstrap, ToTip time.Duration
	// Heights is how many heights the bootstrap stored.
	Heights int
}

// Run is the replica subcommand: flags, the run, the report on stdout.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return finalrange.RunCommand(ctx, "cfbench replica", args, stdout, stderr, Measure)
}

// Measure runs the benchmark on the cached chain o names.
func Measure(ctx context.Context, o finalrange.Options, say func(string, ...any)) (Report, error) {
	set, err := finalrange.Prepare(ctx, o, "cfbench-replica-", say)
	if set != nil {
		defer set.Close()
	}
	if err != nil {
		return Report{}, err
	}
	tip := set.Tip
	rep := Report{ChainHeight: tip, RichBlocks: o.Shape.Blocks, CatchUp: set.CatchUp}

	pHTTP, pP2P := freeAddr(), freeAddr()
	if pHTTP == "" || pP2P == "" {
		return rep, errors.New("replbench: no free loopback port")
	}
	primary, err := daemon.Start(ctx, set.Run(set.PrimaryDir, "primary.log", "--httplisten="+pHTTP, "--listen="+pP2P))
	if err != nil {
		return rep, err
	}
	defer primary.Kill()
	if err := primary.WaitServing(ctx, pP2P, pHTTP, &chaincfg.SimNetParams); err != nil {
		return rep, err
	}
	rHTTP, rP2P := freeAddr(), freeAddr()
	say("replica bootstrap from http://%s, following %s", pHTTP, pP2P)
	// The replica has no node: daemon.Run's node flags are put back to
	// their defaults (flags parse left to right).
	replica, err := daemon.Start(ctx, set.Run(filepath.Join(set.Work, "replica"), "replica.log", "--rpcport=0", "--rpcuser=", "--rpcpassword=",
		"--replicasource=http://"+pHTTP, "--replicaprimary="+pP2P, "--httplisten="+rHTTP, "--listen="+rP2P, "--pollinterval=100ms"))
	if err != nil {
		return rep, err
	}
	defer replica.Kill()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	began, err := replica.WaitFor(wctx, func(l daemon.LogLine) bool { return l.Field("message") == "running as a read replica (no node)" })
	if err != nil {
		return rep, err
	}
	done, err := replica.WaitFor(wctx, func(l daemon.LogLine) bool { return l.Field("message") == "replica bootstrap: done" })
	if err != nil {
		return rep, err
	}
	rep.Bootstrap = done.At().Sub(began.At())
	if h, ok := done.Field("heights").(float64); ok {
		rep.Heights = int(h)
	}
	if err := waitTip(wctx, "http://"+rHTTP, tip); err != nil {
		return rep, err
	}
	rep.ToTip = time.Since(began.At())
	if _, err := replica.Terminate(daemon.StopLimit); err != nil {
		return rep, err
	}
	_, err = primary.Terminate(daemon.StopLimit)
	return rep, err
}

// waitTip polls base's /status until the indexed height is tip.
func waitTip(ctx context.Context, base string, tip uint32) error {
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		resp, err := client.Get(base + "/status")
		if err == nil {
			var st struct {
				IndexedHeight *int64 `json:"indexed_height"`
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.IndexedHeight != nil && *st.IndexedHeight >= int64(tip) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica never reached height %d: %w", tip, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer l.Close()
	return l.Addr().String()
}

// Print writes the report.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "chain: mainnet-shaped, %d tx-rich blocks, extended to height %d (one final range)\n", r.RichBlocks, r.ChainHeight)
	fmt.Fprintf(w, "primary catch-up from its node:   %8.2f s  (%.1f blocks/s)\n", r.CatchUp.Seconds(), float64(r.ChainHeight+1)/r.CatchUp.Seconds())
	fmt.Fprintf(w, "replica bootstrap from its HTTP:  %8.2f s  (%d heights checked and stored, %.1f blocks/s)\n", r.Bootstrap.Seconds(), r.Heights, float64(r.Heights)/r.Bootstrap.Seconds())
	fmt.Fprintf(w, "replica start to the tip:         %8.2f s  (the rest over P2P from the primary)\n", r.ToTip.Seconds())
	fmt.Fprintf(w, "replica to tip / primary catch-up: %.3f\n", r.ToTip.Seconds()/r.CatchUp.Seconds())
}
