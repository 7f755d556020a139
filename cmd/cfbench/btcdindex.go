package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// btcd's log lines (blockchain/indexers, btcd.go in v0.26.2) that bracket
// the index work.
const (
	btcdDroppingCF  = "Dropping all committed filter index entries"
	btcdNotDropping = "Not dropping committed filter index"
	btcdCatchingUp  = "Catching up indexes from height"
	btcdCaughtUp    = "Indexes caught up to height"
	// btcdLogTime is btclog's timestamp, local time, at the start of a line.
	btcdLogTime = "2006-01-02 15:04:05.000"
)

// errNoCatchUp means btcd's log lacks the lines that bracket an index
// catch-up after the filter index was dropped.
var errNoCatchUp = errors.New("btcd logged no index catch-up")

// btcdIndexResult is what btcd's own rebuild of its cfindex cost.
type btcdIndexResult struct {
	// CatchUp is from btcd's "Catching up indexes" line to its "Indexes
	// caught up" line (log timestamps, millisecond resolution): the index
	// work alone.
	CatchUp time.Duration `json:"catch_up_ns"`
	// FromStart is from process start to the "Indexes caught up" line.
	FromStart time.Duration `json:"from_start_ns"`
	// ToRPC is from process start to btcd answering RPC (it builds its
	// indexes before it starts the RPC server).
	ToRPC time.Duration `json:"to_rpc_ns"`
	// FromHeight and ToHeight are the heights btcd logged.
	FromHeight int `json:"from_height"`
	ToHeight   int `json:"to_height"`
	// CPU and PeakRSS are btcd's CPU time and peak RSS from process start
	// until it answered RPC (Linux /proc; zero elsewhere).
	CPU     time.Duration `json:"cpu_ns"`
	PeakRSS int64         `json:"peak_rss_bytes"`
}

// measureBtcdIndex stops btcd, runs it once with --dropcfindex (btcd drops
// its compact filter index and exits), starts it again and measures how
// long it takes to rebuild the index for the whole chain, from its log.
// The node is running again on return, also on most errors.
func measureBtcdIndex(ctx context.Context, node *btcdtest.Node) (btcdIndexResult, error) {
	if err := node.Stop(); err != nil {
		return btcdIndexResult{}, fmt.Errorf("stop btcd: %w", err)
	}
	off, err := fileSize(node.LogPath())
	if err != nil {
		return btcdIndexResult{}, err
	}
	if err := node.RunOnce(ctx, "--dropcfindex"); err != nil {
		return btcdIndexResult{}, fmt.Errorf("btcd --dropcfindex: %w", err)
	}
	dropLog, err := readFrom(node.LogPath(), off)
	if err != nil {
		return btcdIndexResult{}, err
	}
	if !bytes.Contains(dropLog, []byte(btcdDroppingCF)) {
		if bytes.Contains(dropLog, []byte(btcdNotDropping)) {
			return btcdIndexResult{}, errors.New("btcd --dropcfindex: btcd had no filter index to drop")
		}
		return btcdIndexResult{}, fmt.Errorf("btcd --dropcfindex: no %q in its log:\n%s", btcdDroppingCF, dropLog)
	}

	off += int64(len(dropLog))
	start := time.Now()
	if err := node.Launch(); err != nil {
		return btcdIndexResult{}, fmt.Errorf("start btcd after --dropcfindex: %w", err)
	}
	res := btcdIndexResult{ToRPC: time.Since(start)}
	pid := node.PID()
	res.CPU, res.PeakRSS = procstat.CPU(pid), procstat.PeakRSS(pid)
	runLog, err := readFrom(node.LogPath(), off)
	if err != nil {
		return res, err
	}
	begin, end, err := parseCatchUp(runLog, &res)
	if err != nil {
		return res, err
	}
	res.CatchUp = end.Sub(begin)
	res.FromStart = end.Sub(start)
	return res, nil
}

// parseCatchUp finds btcd's catch-up lines in log and returns their
// timestamps, filling the heights of res.
func parseCatchUp(log []byte, res *btcdIndexResult) (begin, end time.Time, err error) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, btcdCatchingUp):
			if begin, err = btcdLineTime(line); err != nil {
				return begin, end, err
			}
			_, msg, _ := strings.Cut(line, btcdCatchingUp)
			if _, err := fmt.Sscanf(msg, " %d to %d", &res.FromHeight, &res.ToHeight); err != nil {
				return begin, end, fmt.Errorf("btcd log %q: %w", line, err)
			}
		case strings.Contains(line, btcdCaughtUp):
			if end, err = btcdLineTime(line); err != nil {
				return begin, end, err
			}
		}
	}
	if begin.IsZero() || end.IsZero() {
		return begin, end, fmt.Errorf("%w: want %q and %q lines in:\n%s", errNoCatchUp, btcdCatchingUp, btcdCaughtUp, log)
	}
	return begin, end, nil
}

// btcdLineTime parses the timestamp that starts a btcd log line.
func btcdLineTime(line string) (time.Time, error) {
	if len(line) < len(btcdLogTime) {
		return time.Time{}, fmt.Errorf("btcd log line %q: no timestamp", line)
	}
	t, err := time.ParseInLocation(btcdLogTime, line[:len(btcdLogTime)], time.Local)
	if err != nil {
		return time.Time{}, fmt.Errorf("btcd log line %q: %w", line, err)
	}
	return t, nil
}

// fileSize is the size of the file at path.
func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("btcd log: %w", err)
	}
	return fi.Size(), nil
}

// readFrom reads the file at path from offset off to its end.
func readFrom(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("btcd log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("btcd log: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("btcd log: %w", err)
	}
	return b, nil
}
