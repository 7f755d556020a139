package attack

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/cfindexd/cfindexd/bloom"
)

// TestSpots pins where each class's well-behaved clients dial from: a
// fresh /16 always, another address of the attacker's /16 when the class
// has a home, the attacker's own address when the class is about
// addresses, a fresh /16 over v2 when the class asks for a v2 client.
func TestSpots(t *testing.T) {
	for _, tc := range []struct {
		class Class
		index int
		want  []Spot
	}{
		{Class{}, 0, []Spot{{"fresh", "127.250.1.1", false}}},
		{Class{Home: "127.140.0.1"}, 3, []Spot{{"fresh", "127.250.4.1", false}, {"subnet", "127.140.251.1", false}}},
		{Class{Home: "127.240.0.1", AboutAddress: true}, 249, []Spot{{"fresh", "127.250.250.1", false}, {"subnet", "127.240.251.1", false}, {"address", "127.240.0.1", false}}},
		{Class{Home: "127.160.0.1", V2Client: true}, 5, []Spot{{"fresh", "127.250.6.1", false}, {"fresh-v2", "127.249.6.1", true}, {"subnet", "127.160.251.1", false}}},
	} {
		if got := tc.class.Spots(tc.index); !slices.Equal(got, tc.want) {
			t.Errorf("%+v, class %d: spots %v, want %v", tc.class, tc.index, got, tc.want)
		}
	}
}

// TestClassesDeclareTheirGoals pins the classes and what each
// declares: unique names, a home for the good clients in the attacker's
// /16, the four fair-share classes, BIP-37 on where the wallet must run,
// the 200-client peak goal.
func TestClassesDeclareTheirGoals(t *testing.T) {
	fair := map[string]bool{"getcfilters-readers": true, "tiny-requests": true, "bip37-maximal": true, "bip37-nonreaders": true}
	bip37 := map[string]bool{"bip37-maximal": true, "bip37-nonreaders": true, "upload-flood": true}
	seen := map[string]bool{}
	for _, c := range Classes() {
		if seen[c.Name] {
			t.Errorf("class %s twice", c.Name)
		}
		seen[c.Name] = true
		if net.ParseIP(c.Home).To4() == nil || c.Run == nil || c.Title == "" || c.OpsUnit == "" {
			t.Errorf("%s: home %q, run %v, title %q, unit %q", c.Name, c.Home, c.Run != nil, c.Title, c.OpsUnit)
		}
		if c.FairShare != fair[c.Name] || c.BIP37() != bip37[c.Name] {
			t.Errorf("%s: fair share %v, BIP-37 %v", c.Name, c.FairShare, c.BIP37())
		}
		if want := map[bool]string{true: "500ms", false: "2s"}[fair[c.Name]]; c.P99Goal().String() != want {
			t.Errorf("%s: p99 goal %s, want %s", c.Name, c.P99Goal(), want)
		}
	}
	for _, name := range []string{"getcfilters-readers", "tiny-requests", "bip37-maximal", "bip37-nonreaders", "subnet-hold",
		"one-subnet-200", "discouraged-nat", "http-pipeline", "eviction-churn", "upload-flood"} {
		if !seen[name] {
			t.Errorf("no class %s", name)
		}
	}
	i := slices.IndexFunc(Classes(), func(c Class) bool { return c.Name == "one-subnet-200" })
	if c := Classes()[i]; c.PeakGoal != 200 || !slices.Contains(c.Flags, "--maxpeers=400") {
		t.Errorf("one-subnet-200: peak goal %d, flags %v", c.PeakGoal, c.Flags)
	}
}

// TestTallyPeak pins Level and Peak under concurrent raises and lowers.
func TestTallyPeak(t *testing.T) {
	var tally Tally
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(tally.raise)
	}
	wg.Wait()
	for range 20 {
		tally.lower()
	}
	tally.raise()
	if tally.Level.Load() != 31 || tally.Peak.Load() != 50 {
		t.Errorf("level %d, peak %d; want 31, 50", tally.Level.Load(), tally.Peak.Load())
	}
}

// TestMaximalFilterPassesTheFPRCap checks the maximal filter is what the
// bip37 classes claim: BIP-37's largest, 50 hash functions, 95 % full,
// and still under cfindexd's default bloommaxfpr (0.1) as cfindexd's
// bloom package estimates it.
func TestMaximalFilterPassesTheFPRCap(t *testing.T) {
	for seed := range uint64(5) {
		f, err := bloom.Load(maximalFilterLoad(newRand(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if f.Size() != bloom.MaxFilterSize || f.HashFuncs() != bloom.MaxHashFuncs {
			t.Errorf("seed %d: %d bytes, %d hash functions", seed, f.Size(), f.HashFuncs())
		}
		if fill, fpr := f.Fill(), f.EstimatedFPR(); fill < 0.94 || fill > 0.96 || fpr >= 0.1 {
			t.Errorf("seed %d: fill %.4f, estimated FPR %.4f", seed, fill, fpr)
		}
	}
}

// TestLostConnection tells a connection's end from a wrong answer.
func TestLostConnection(t *testing.T) {
	for _, tc := range []struct {
		err  error
		lost bool
	}{
		{io.EOF, true},
		{fmt.Errorf("getcfilters 1..9: %w", io.ErrUnexpectedEOF), true},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{fmt.Errorf("read: %w", os.ErrDeadlineExceeded), true},
		{errors.New("cfilter of height 7 differs from the frame of btcd's filter"), false},
	} {
		if got := lostConnection(tc.err); got != tc.lost {
			t.Errorf("%v: lost %v, want %v", tc.err, got, tc.lost)
		}
	}
}
