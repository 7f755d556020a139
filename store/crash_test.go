package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// The helper process is this test binary run again with helperEnv set; it
// is a separate process so that SIGKILL can stop it at any instruction.
const (
	helperEnv        = "CFINDEXD_STORE_HELPER"
	helperPathEnv    = "CFINDEXD_STORE_PATH"
	helperGenesisEnv = "CFINDEXD_STORE_GENESIS"
)

// crashBranch and crashMaxN fix the chain the crash helper writes: heights
// 0, 1, ... of genBlock(crashBranch, ...), about 4 KB of filter per block.
const (
	crashBranch   = 77
	crashMaxN     = 1500
	crashRounds   = 25
	crashBatchMax = 80
)

// crashBatchEnds returns the last height of each batch the helper commits:
// batch 0 is heights 0..ends[0], batch k is ends[k-1]+1..ends[k].
func crashBatchEnds() []uint32 {
	rng := rand.New(rand.NewPCG(testSeed, 7))
	ends := make([]uint32, 2000)
	var next uint32
	for k := range ends {
		next += 1 + uint32(rng.IntN(crashBatchMax))
		ends[k] = next - 1
	}
	return ends
}

// TestHelperProcess is not a test: it is the child process of
// TestCrashSafety ("crash"), TestLockedAcrossProcesses ("lock"),
// TestCreateKilled ("create") and TestBackfillCrashSafety ("backfill").
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for TestCrashSafety and TestLockedAcrossProcesses")
	}
	var genesis chainhash.Hash
	if err := chainhash.Decode(&genesis, os.Getenv(helperGenesisEnv)); err != nil {
		t.Fatal(err)
	}
	path := os.Getenv(helperPathEnv)
	switch mode {
	case "lock":
		_, err := Open(path, genesis, Options{Timeout: 300 * time.Millisecond})
		switch {
		case errors.Is(err, ErrLocked):
			fmt.Println("open: locked")
		default:
			fmt.Printf("open: %v\n", err)
		}
	case "crash":
		if err := crashHelper(path, genesis); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			os.Exit(3)
		}
	case "create":
		createHelper(path, genesis, os.Getenv(helperStepEnv))
	case "backfill":
		if err := backfillHelper(path, genesis); err != nil {
			fmt.Fprintln(os.Stderr, "backfill helper:", err)
			os.Exit(3)
		}
	}
}

// crashHelper commits the batches of crashBatchEnds in a loop, with real
// fsyncs, until it is killed (or its deadline passes). Every fifth batch it
// rolls back two batches once and commits them again (taking them out of the
// stale set). It reports on stdout, unbuffered, before and after each write:
//
//	ready <tip height or -1>
//	begin commit <last height> | begin rollback <target height>
//	tip <height>
func crashHelper(path string, genesis chainhash.Hash) error {
	s, err := Open(path, genesis, Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	ends := crashBatchEnds()
	endIndex := make(map[uint32]int, len(ends))
	for k, e := range ends {
		endIndex[e] = k
	}
	next := 0 // index of the next batch to commit
	tip, ok := s.Tip()
	if ok {
		k, found := endIndex[tip.Height]
		if !found {
			return fmt.Errorf("reopened at tip %d, which is no batch end", tip.Height)
		}
		next = k + 1
		fmt.Printf("ready %d\n", tip.Height)
	} else {
		fmt.Println("ready -1")
	}
	rolledBack := make(map[int]bool)
	deadline := time.Now().Add(60 * time.Second)
	for next < len(ends) && time.Now().Before(deadline) {
		var parent *BlockRecord
		if ok {
			parent = &BlockRecord{Height: tip.Height, Hash: tip.Hash, FilterHeader: tip.FilterHeader}
		}
		first := uint32(0)
		if next > 0 {
			first = ends[next-1] + 1
		}
		batch := genChainMaxN(crashBranch, parent, int(ends[next]-first+1), crashMaxN)
		fmt.Printf("begin commit %d\n", ends[next])
		if err := s.CommitBatch(batch); err != nil {
			return err
		}
		tip, ok = s.Tip()
		fmt.Printf("tip %d\n", tip.Height)
		if next%5 == 4 && !rolledBack[next] {
			rolledBack[next] = true
			fmt.Printf("begin rollback %d\n", ends[next-2])
			if _, err := s.Rollback(ends[next-2]); err != nil {
				return err
			}
			tip, ok = s.Tip()
			fmt.Printf("tip %d\n", tip.Height)
			next -= 2
		}
		next++
	}
	return s.Close()
}

// TestCrashSafety kills a writer with SIGKILL at crashRounds moments chosen
// with a fixed seed (after its n-th report line, n random, so kills land
// before, inside and between transactions) and checks after each kill
// that the store reopens at the last reported tip or at the end of the write
// that was in flight, with every block below it present and linked and
// nothing above it.
func TestCrashSafety(t *testing.T) {
	ends := crashBatchEnds()
	isEnd := make(map[uint32]bool, len(ends))
	for _, e := range ends {
		isEnd[e] = true
	}
	expected := genChainMaxN(crashBranch, nil, 1, crashMaxN)
	extend := func(h uint32) {
		if missing := int(h) + 1 - len(expected); missing > 0 {
			expected = append(expected, genChainMaxN(crashBranch, &expected[len(expected)-1], missing, crashMaxN)...)
		}
	}
	expectedAt := func(h uint32) BlockRecord {
		extend(h)
		return expected[h]
	}
	genesis := expected[0].Hash
	path := filepath.Join(t.TempDir(), "crash.db")
	rng := rand.New(rand.NewPCG(testSeed, 11))

	var interrupted int // kills that stopped a write before it committed
	for round := 0; round < crashRounds; round++ {
		waitLines := 1 + rng.IntN(14)
		lines, stderr := runAndKill(t, path, genesis, waitLines)

		// What the child reported: the last tip it saw committed, and the
		// write it had begun after that, if any.
		lastTip, inFlight := int64(-1), int64(-1)
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "ready", "tip":
				lastTip, _ = strconv.ParseInt(f[len(f)-1], 10, 64)
				inFlight = -1
			case "begin":
				inFlight, _ = strconv.ParseInt(f[len(f)-1], 10, 64)
			}
		}

		s, err := Open(path, genesis, Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v\nchild stderr:\n%s", round, err, stderr)
		}
		tip, ok := s.Tip()
		got := int64(-1)
		if ok {
			got = int64(tip.Height)
		}
		if got != lastTip && got != inFlight {
			t.Fatalf("round %d: reopened at tip %d; child last reported %d with %d in flight", round, got, lastTip, inFlight)
		}
		if ok {
			if !isEnd[tip.Height] {
				t.Fatalf("round %d: tip %d is not a batch end", round, tip.Height)
			}
			if tip != tipOf(expectedAt(tip.Height)) {
				t.Fatalf("round %d: tip %+v is not the expected block", round, tip)
			}
		}
		if inFlight >= 0 && got != inFlight {
			interrupted++
		}
		checkConsistent(t, s, expectedAt, got)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d lines, reopened at tip %d (reported %d, in flight %d)", round, waitLines, got, lastTip, inFlight)
	}
	if interrupted == 0 {
		t.Fatal("no kill interrupted a write; the test proves nothing")
	}
	t.Logf("%d of %d kills interrupted a write", interrupted, crashRounds)
}

// runAndKill starts the crash helper on path, waits for its waitLines-th
// report line, kills it with SIGKILL and returns every line it wrote.
func runAndKill(t *testing.T, path string, genesis chainhash.Hash, waitLines int) ([]string, string) {
	t.Helper()
	return runAndKillMode(t, "crash", path, genesis, waitLines, "")
}

// runAndKillMode is runAndKill for the helper of mode; it stops waiting
// for more lines after one equal to last (if not empty).
func runAndKillMode(t *testing.T, mode, path string, genesis chainhash.Hash, waitLines int, last string) ([]string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperPathEnv+"="+path, helperGenesisEnv+"="+genesis.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lineCh := make(chan string, 1024)
	go func() {
		defer close(lineCh)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lineCh <- sc.Text()
		}
	}()

	var lines []string
	deadline := time.NewTimer(testtime.Scale(20 * time.Second))
	defer deadline.Stop()
	for len(lines) < waitLines {
		select {
		case l, open := <-lineCh:
			if !open {
				_ = cmd.Wait()
				t.Fatalf("helper exited early after %q\nstderr:\n%s", lines, stderr.String())
			}
			lines = append(lines, l)
			if last != "" && l == last {
				waitLines = len(lines)
			}
		case <-deadline.C:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("helper wrote %d of %d lines within the deadline\nstderr:\n%s", len(lines), waitLines, stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	for l := range lineCh { // drain what it wrote before dying; ends at EOF
		lines = append(lines, l)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("helper was not killed by the signal: %v\nstderr:\n%s", err, stderr.String())
	}
	return lines, stderr.String()
}

// checkConsistent checks the store against the expected chain up to tip
// (-1: empty): every active block present, equal and linked, with its
// cfilter checksum, nothing above the tip, the hash index and the stale set
// in step, and bbolt's own page check clean.
func checkConsistent(t *testing.T, s *Store, expectedAt func(uint32) BlockRecord, tip int64) {
	t.Helper()
	var prev BlockRecord
	for start := int64(0); start <= tip; start += MaxRange {
		end := min(start+MaxRange-1, tip)
		recs, err := s.FiltersByHeight(uint32(start), uint32(end))
		if err != nil {
			t.Fatalf("FiltersByHeight(%d, %d): %v", start, end, err)
		}
		for _, r := range recs {
			if d := diffRecord(r, expectedAt(r.Height)); d != "" {
				t.Fatalf("block %d after crash: %s differs", r.Height, d)
			}
			if r.Height > 0 && (r.Header.PrevBlock != prev.Hash || r.FilterHeader != filterHeader(r.Filter, prev.FilterHeader)) {
				t.Fatalf("block %d does not link to block %d", r.Height, prev.Height)
			}
			prev = r
		}
	}
	if _, err := s.HashAt(uint32(tip + 1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("height %d above the tip: %v", tip+1, err)
	}
	checkChecksums(t, s)
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketHeaders, bucketHeights, bucketFilters, bucketFilterHeaders, bucketChecksums} {
			if n := tx.Bucket(name).Stats().KeyN; int64(n) != tip+1 {
				return fmt.Errorf("bucket %s holds %d keys, want %d", name, n, tip+1)
			}
		}
		err := tx.Bucket(bucketStale).ForEach(func(k, v []byte) error {
			hash := chainhash.Hash(k)
			r, _, err := decodeStale(hash, v)
			if err != nil {
				return err
			}
			if int64(r.Height) <= tip {
				return fmt.Errorf("stale block %s at height %d at or below tip %d", hash, r.Height, tip)
			}
			if d := diffRecord(r, expectedAt(r.Height)); d != "" {
				return fmt.Errorf("stale block at height %d: %s differs from the chain", r.Height, d)
			}
			if tx.Bucket(bucketHeights).Get(k) != nil {
				return fmt.Errorf("stale block %s is also active", hash)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for err := range tx.Check() {
			return fmt.Errorf("bbolt check: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runWithDeadline runs cmd and returns its combined output, killing it if
// it outlives d.
func runWithDeadline(cmd *exec.Cmd, d time.Duration) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		return out.Bytes(), err
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		return out.Bytes(), fmt.Errorf("helper still running after %s", d)
	}
}

// backfillHelper opens the schema-1 store at path (the upgrade, then the
// checksum backfill in batches of 50 heights, with real fsyncs) and
// reports on stdout, unbuffered:
//
//	ready
//	begin backfill <first height of the batch>
//	backfill <next height>
//	done
//
// then waits to be killed.
func backfillHelper(path string, genesis chainhash.Hash) error {
	finished := make(chan struct{})
	hook := func(phase string, next uint32) {
		switch phase {
		case "read":
			fmt.Printf("begin backfill %d\n", next)
		case "write":
			fmt.Printf("backfill %d\n", next)
		}
	}
	s, err := Open(path, genesis, Options{Timeout: 5 * time.Second, backfillBatchHeights: 50, backfillHook: hook})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	deadline := time.Now().Add(60 * time.Second)
	go func() {
		for time.Now().Before(deadline) {
			st, err := s.ChecksumBackfill()
			if err != nil || st.Err != nil || !st.Pending {
				close(finished)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	<-finished
	fmt.Println("done")
	time.Sleep(time.Until(deadline))
	return s.Close()
}

// TestBackfillCrashSafety kills the checksum backfill of an upgraded
// schema-1 store with SIGKILL at moments chosen with a fixed seed, the
// first during the upgrade itself, and checks after each kill that the
// store reopens with the backfill marker at the end of a committed batch,
// every checksum below it stored and right and none above it; the
// backfill then goes on from there to the end.
func TestBackfillCrashSafety(t *testing.T) {
	const n = 1500
	chain := genChainMaxN(crashBranch, nil, n, 200)
	genesis := chain[0].Hash
	s, path := openTest(t, genesis)
	commitAll(t, s, chain, 500)
	side := genChainMaxN(crashBranch+1, &chain[n-6], 3, 200)
	if _, err := s.Reorg(uint32(n-6), side); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reorg(uint32(n-6), chain[n-5:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToV1(t, path)

	rng := rand.New(rand.NewPCG(testSeed, 13))
	interrupted, lastNext := 0, int64(-1)
	for round := 0; ; round++ {
		if round > 60 {
			t.Fatal("backfill not done after 60 rounds")
		}
		waitLines := 1 + rng.IntN(8)
		if round == 0 {
			waitLines = 0 // kill at once: during the upgrade or before
		}
		lines, stderr := runAndKillMode(t, "backfill", path, genesis, waitLines, "done")
		reported, inFlight, done := int64(-1), false, false
		for _, l := range lines {
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && f[0] == "backfill":
				reported, _ = strconv.ParseInt(f[1], 10, 64)
				inFlight = false
			case len(f) == 3 && f[0] == "begin":
				inFlight = true
			case len(f) == 1 && f[0] == "done":
				done = true
			}
		}
		s, err := Open(path, genesis, Options{Timeout: 5 * time.Second, holdBackfill: true})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v\nchild stderr:\n%s", round, err, stderr)
		}
		st, err := s.ChecksumBackfill()
		if err != nil {
			t.Fatal(err)
		}
		next := int64(n)
		if st.Pending {
			next = int64(st.Next)
			if st.End != n {
				t.Fatalf("round %d: backfill marker ends at %d, want %d", round, st.End, n)
			}
		}
		if next < lastNext || (reported >= 0 && next < reported) {
			t.Fatalf("round %d: backfill at %d, but %d was committed before", round, next, max(lastNext, reported))
		}
		if next%50 != 0 && next != n {
			t.Fatalf("round %d: backfill at %d, not the end of a batch", round, next)
		}
		if inFlight && next == reported {
			interrupted++
		}
		checkChecksums(t, s)
		err = s.db.View(func(tx *bolt.Tx) error {
			if k, _ := tx.Bucket(bucketChecksums).Cursor().Seek(heightKey(uint32(next))); k != nil {
				return fmt.Errorf("checksum at height %d above the backfill's next %d", binary32(k), next)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d lines, backfill at %d (reported %d, in flight %v)", round, waitLines, next, reported, inFlight)
		lastNext = next
		if done || next == n {
			break
		}
	}
	if interrupted == 0 {
		t.Fatal("no kill interrupted a batch; the test proves nothing")
	}
	s, err := Open(path, genesis, Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitBackfill(t, s)
	checkChecksums(t, s)
	for start := 0; start < n; start += MaxRange {
		end := min(start+MaxRange, n)
		recs, err := s.FiltersByHeight(uint32(start), uint32(end-1))
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, "after the backfill", recs, chain[start:end])
	}
}
