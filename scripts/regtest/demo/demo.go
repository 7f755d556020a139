package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// demoConfig is one run of the demo.
type demoConfig struct {
	// StateDir holds everything the run creates; it must not exist, be
	// empty, or be a previous run's (it is wiped).
	StateDir string
	// Node is nodeAuto, nodeBtcd or nodeBitcoind.
	Node string
	// Blocks is how many blocks with transactions to mine.
	Blocks int
	// Keep leaves everything running after the report until ctx ends or
	// cfindexd exits (say, because `stop` ended it).
	Keep bool
	// Out receives progress lines and the report.
	Out io.Writer
	// OwnPIDFile records the demo's own pid for `stop`; the command sets
	// it, tests (which must not be signalled) do not.
	OwnPIDFile bool
	// onReady, if set, is called with the report once it is printed.
	onReady func(*report)
}

// runDemo runs the demo start to finish and stops every process it started
// before it returns, on every path. The state directory is removed after
// a success and kept (for its logs) after a failure.
func runDemo(ctx context.Context, cfg demoConfig) (rep *report, err error) {
	kind, err := resolveNodeKind(cfg.Node)
	if err != nil {
		return nil, err
	}
	if cfg.Blocks < 1 {
		return nil, fmt.Errorf("-blocks %d: want at least 1", cfg.Blocks)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if err := prepareStateDir(cfg.StateDir); err != nil {
		return nil, err
	}
	if cfg.OwnPIDFile {
		if exe, xerr := os.Executable(); xerr == nil {
			exe, _ = filepath.EvalSymlinks(exe)
			if err := writePIDFile(cfg.StateDir, demoPIDName, os.Getpid(), exe); err != nil {
				return nil, err
			}
		}
	}
	var cleanups []func()
	current := "starting" // the step under way, for an interruption
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("interrupted while %s: %w", current, ctx.Err())
			}
			fmt.Fprintf(cfg.Out, "state and logs kept in %s (`%s` removes them)\n", cfg.StateDir, stopCommand(cfg.StateDir))
			return
		}
		_ = os.RemoveAll(cfg.StateDir)
	}()

	rep = &report{NodeKind: kind, StateDir: cfg.StateDir}
	step := func(name string, f func() error) error {
		fmt.Fprintf(cfg.Out, "- %s\n", name)
		current = name
		start := time.Now()
		err := f()
		rep.Phases = append(rep.Phases, phase{Name: name, Took: time.Since(start)})
		if err == nil {
			err = ctx.Err()
		}
		return err
	}

	var daemonBin string
	if err := step("build cfindexd", func() (err error) {
		daemonBin, err = buildDaemon(ctx, cfg.StateDir)
		return err
	}); err != nil {
		return nil, err
	}

	var node regtestNode
	if err := step("start "+kind, func() (err error) {
		if path, err := btcdtest.BinaryPath(); err == nil && kind == nodeBtcd {
			fmt.Fprint(cfg.Out, btcdBuildNote(path))
		}
		node, err = startNode(ctx, kind, cfg.StateDir)
		return err
	}); err != nil {
		return nil, err
	}
	cleanups = append(cleanups, func() { _ = node.Stop() })
	rep.NodeRPC, rep.NodeP2P, rep.MineCommand = node.Describe(), node.P2PAddr(), node.MineCommand()

	if err := step(fmt.Sprintf("mine %d blocks, %d with transactions", demoChainBlocks(cfg.Blocks), cfg.Blocks), func() (err error) {
		rep.Payment, err = mineDemoChain(ctx, node, cfg.Blocks, miningProgress(cfg.Out, demoChainBlocks(cfg.Blocks), time.Now))
		if err != nil {
			return err
		}
		info, err := node.Client().GetChainInfo(ctx)
		rep.NodeHeight, rep.NodeHash = int32(info.Blocks), info.BestHash
		return err
	}); err != nil {
		return nil, err
	}

	var d *daemon
	if err := step("start cfindexd and index the chain", func() (err error) {
		d, err = startDaemon(cfg.StateDir, daemonBin, node)
		if err != nil {
			return err
		}
		cleanups = append(cleanups, func() { _ = d.stop() })
		if err := d.waitCaughtUp(ctx, rep.NodeHeight); err != nil {
			return err
		}
		rep.IndexedHeight = rep.NodeHeight
		rep.IndexedHash, rep.IndexedFilterHeader, err = d.tipAt(ctx, rep.NodeHeight)
		return err
	}); err != nil {
		return nil, err
	}
	rep.P2PAddr, rep.HTTPAddr, rep.DaemonBin = d.p2pAddr, d.httpAddr, daemonBin

	var light *lightClient
	if err := step("sync neutrino from cfindexd alone", func() (err error) {
		rep.NeutrinoDir = filepath.Join(cfg.StateDir, "neutrino")
		light, err = startLight(rep.NeutrinoDir, &chaincfg.RegressionNetParams, d.p2pAddr)
		if err != nil {
			return err
		}
		cleanups = append(cleanups, light.stop)
		rep.Light, err = light.waitSynced(ctx, rep.NodeHash)
		return err
	}); err != nil {
		return nil, err
	}

	rep.RescanFrom, rep.RescanBlock = maturityBlocks, rep.NodeHeight
	if err := step("rescan for the watched address", func() (err error) {
		rep.Matches, err = light.rescan(ctx, rep.Payment.Address, rep.RescanFrom, rep.RescanBlock)
		return err
	}); err != nil {
		return nil, err
	}

	if err := check(rep, light, d.p2pAddr); err != nil {
		return nil, err
	}
	rep.write(cfg.Out)
	if !cfg.Keep {
		return rep, nil
	}
	rep.writeAddresses(cfg.Out)
	if cfg.onReady != nil {
		cfg.onReady(rep)
	}
	select {
	case <-ctx.Done():
	case <-d.proc.done:
		if ctx.Err() == nil {
			_, why := d.proc.exited()
			return nil, why
		}
	}
	fmt.Fprintln(cfg.Out, "stopping")
	return rep, nil
}

// check holds the run to what the demo claims: all three agree on the tip,
// neutrino's verified filter header is cfindexd's, the rescan found the
// demo payment in its block and nothing else, and neutrino kept cfindexd
// as its one, unbanned peer.
func check(rep *report, light *lightClient, p2pAddr string) error {
	switch {
	case rep.IndexedHash != rep.NodeHash:
		return fmt.Errorf("cfindexd's block at %d is %s, the node's %s", rep.NodeHeight, rep.IndexedHash, rep.NodeHash)
	case rep.Light.Hash != rep.NodeHash || rep.Light.Height != rep.NodeHeight:
		return fmt.Errorf("neutrino's tip is %d %s, the node's %d %s", rep.Light.Height, rep.Light.Hash, rep.NodeHeight, rep.NodeHash)
	case rep.Light.FilterHeader != rep.IndexedFilterHeader:
		return fmt.Errorf("neutrino's filter header at %d is %s, cfindexd's %s", rep.NodeHeight, rep.Light.FilterHeader, rep.IndexedFilterHeader)
	case len(rep.Matches) != 1 || rep.Matches[0].TxID != rep.Payment.TxID || rep.Matches[0].Height != rep.Payment.Height:
		return fmt.Errorf("rescan found %v, want %s at %d only", rep.Matches, rep.Payment.TxID, rep.Payment.Height)
	}
	peers, banned := light.peers(p2pAddr)
	rep.LightPeers = peers
	if banned || peers != 1 {
		return fmt.Errorf("neutrino has %d peers and banned cfindexd: %v", peers, banned)
	}
	return nil
}

// btcdBuildNote says, before the wait, that btcd is about to be built into
// path; empty once it is built.
func btcdBuildNote(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return ""
	}
	return fmt.Sprintf("  building btcd %s from the module cache into %s (first run only)\n", btcdtest.BtcdVersion, path)
}

// stateMarker marks a directory as the demo's, so that neither a run nor
// stop ever wipes a directory it did not create.
const stateMarker = ".cfindexd-regtest-demo"

// prepareStateDir makes dir an empty state directory. A previous run's
// directory is wiped unless one of its processes still runs.
func prepareStateDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(dir, stateMarker)); err != nil {
			return fmt.Errorf("%s is not empty and not a demo state directory; choose another -state", dir)
		}
		live, err := liveProcesses(dir)
		if err != nil {
			return err
		}
		if len(live) > 0 {
			return fmt.Errorf("a previous demo still runs (%s, pid %d); `%s` ends it", live[0].Name, live[0].PID, stopCommand(dir))
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove previous state: %w", err)
		}
	}
	if err := mkdir(dir); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, stateMarker), nil, 0o600)
}

// miningProgressEvery is how often the mining step reports its progress.
const miningProgressEvery = 2 * time.Second

// miningProgress returns the mining step's progress callback: a line with
// the blocks mined of total, at most every miningProgressEvery, and one
// when the last block is mined.
func miningProgress(w io.Writer, total int, now func() time.Time) func(mined int) {
	began := now()
	last := began
	return func(mined int) {
		t := now()
		if mined < total && t.Sub(last) < miningProgressEvery {
			return
		}
		last = t
		el := t.Sub(began)
		rate := 0.0
		if el > 0 {
			rate = float64(mined) / el.Seconds()
		}
		fmt.Fprintf(w, "  mined %d of %d blocks (%.0f blocks/s, %s)\n", mined, total, rate, el.Round(100*time.Millisecond))
	}
}
