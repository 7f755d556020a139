package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/internal/hostres"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/p2p"
)

// The budgets are the servers' own bounds for the daemon's configuration,
// plus the indexer's and the mirror's; each key moves its part.
func TestMemoryBudgets(t *testing.T) {
	nw, err := netparams.Lookup("main")
	if err != nil {
		t.Fatal(err)
	}
	def := defaultConfig()
	b := memoryBudgetOf(def, nw)
	t.Logf("defaults: indexer %d + P2P %d + HTTP %d + mempool %d + base %d = %d MiB",
		b.Indexer>>20, b.P2P>>20, b.HTTP>>20, b.Mempool>>20, b.Base>>20, b.total()>>20)
	if b.Indexer != (64+8*4)<<20 || b.Base != memoryBase || b.Mempool != 0 {
		t.Errorf("defaults: %+v", b)
	}
	pc, err := p2pConfig(def, nw, nil, nil, (*nodeLink)(nil), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if b.P2P != p2p.MemoryBound(pc) || b.P2P < 150<<20 || b.P2P > 250<<20 {
		t.Errorf("P2P budget %d MiB, want p2p.MemoryBound's (about 210)", b.P2P>>20)
	}
	if b.HTTP != httpapi.MemoryBound(httpLimits(def, httpapi.Config{})) || b.HTTP == 0 {
		t.Errorf("HTTP budget %d MiB, want httpapi.MemoryBound's", b.HTTP>>20)
	}
	if b.total() != b.Indexer+b.P2P+b.HTTP+b.Mempool+b.Base {
		t.Errorf("total %d is not the sum of %+v", b.total(), b)
	}

	for _, tc := range []struct {
		name  string
		cfg   func(c *Config)
		check func(got memoryBudget) bool
	}{
		{"listen off: no P2P budget", func(c *Config) { c.Listen = "" }, func(g memoryBudget) bool { return g.P2P == 0 && g.HTTP == b.HTTP }},
		{"httplisten off: no HTTP budget", func(c *Config) { c.HTTPListen = "" }, func(g memoryBudget) bool { return g.HTTP == 0 && g.P2P == b.P2P }},
		{"more peers, more P2P", func(c *Config) { c.MaxPeers = 250 }, func(g memoryBudget) bool { return g.P2P > b.P2P }},
		{"sendbudget counts byte for byte", func(c *Config) { c.SendBudget += 10 }, func(g memoryBudget) bool { return g.P2P-b.P2P == 10<<20 }},
		{"block fetches count", func(c *Config) { c.MaxBlockFetches++ }, func(g memoryBudget) bool { return g.P2P > b.P2P }},
		{"more HTTP connections", func(c *Config) { c.HTTPMaxConns = 1024 }, func(g memoryBudget) bool { return g.HTTP > b.HTTP }},
		{"no script cache, 2 workers", func(c *Config) { c.ScriptCache, c.Workers = 0, 2 }, func(g memoryBudget) bool { return g.Indexer == 2*memoryPerWorker }},
		{"BIP-37: a larger P2P bound and the mirror", func(c *Config) { c.PeerBloomFilters = true },
			func(g memoryBudget) bool { return g.P2P > b.P2P+90<<20 && g.Mempool == 64<<20+mempoolSlab }},
		{"BIP-37 without a mirror", func(c *Config) { c.PeerBloomFilters, c.MempoolMirror = true, 0 }, func(g memoryBudget) bool { return g.Mempool == 0 }},
	} {
		cfg := def
		tc.cfg(&cfg)
		if got := memoryBudgetOf(cfg, nw); !tc.check(got) {
			t.Errorf("%s: %+v (defaults %+v)", tc.name, got, b)
		}
	}
}

// The soft memory limit is the memorylimit key, or the sum of the
// budgets; GOMEMLIMIT in the environment wins. GOGC is 20 unless the
// environment sets it. The budgets are logged.
func TestMemoryLimit(t *testing.T) {
	origLimit := debug.SetMemoryLimit(-1)
	origGC := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetMemoryLimit(origLimit); debug.SetGCPercent(origGC) })
	def := defaultConfig()
	budget := memoryBudget{Indexer: 96 << 20, P2P: 210 << 20, HTTP: 460 << 20, Base: memoryBase}
	for _, tc := range []struct {
		name      string
		cfg       func(c *Config)
		env       map[string]string
		wantLimit int64 // the runtime's limit afterwards
		wantGC    int
		logged    string // the memory_limit_from field, or the memory_limit one
		cgroupMax int64
	}{
		{"the sum of the budgets", func(*Config) {}, nil, budget.total(), memoryGCPercent, "budgets", 0},
		{"memorylimit", func(c *Config) { c.MemoryLimit = 200 }, nil, 200 << 20, memoryGCPercent, "memorylimit", 1 << 30},
		{"GOMEMLIMIT wins", func(c *Config) { c.MemoryLimit = 200 }, map[string]string{"GOMEMLIMIT": "1GiB"}, math.MaxInt64, memoryGCPercent, "1GiB (GOMEMLIMIT; memorylimit ignored)", 0},
		{"GOGC kept", func(*Config) {}, map[string]string{"GOGC": "80"}, budget.total(), 100, "budgets", 0},
		{"under a roomy MemoryMax", func(*Config) {}, nil, budget.total(), memoryGCPercent, "budgets", 2 << 30},
		{"under a tight MemoryMax: three quarters of it", func(*Config) {}, nil, 768 << 20, memoryGCPercent, "memory.max", 1 << 30},
	} {
		cfg := def
		tc.cfg(&cfg)
		debug.SetMemoryLimit(math.MaxInt64)
		debug.SetGCPercent(100)
		var logs bytes.Buffer
		applyMemoryLimit(cfg, budget, func(k string) string { return tc.env[k] }, tc.cgroupMax, zerolog.New(&logs))
		if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
			t.Errorf("%s: limit %d MiB, want %d MiB", tc.name, got>>20, tc.wantLimit>>20)
		}
		if got := debug.SetGCPercent(100); got != tc.wantGC {
			t.Errorf("%s: GOGC %d, want %d", tc.name, got, tc.wantGC)
		}
		var line map[string]any
		lines := bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n"))
		if err := json.Unmarshal(lines[len(lines)-1], &line); err != nil {
			t.Fatalf("%s: log %q: %v", tc.name, logs.String(), err)
		}
		if line["message"] != "memory budgets" || line["p2p_mib"] != float64(210) || line["http_mib"] != float64(460) ||
			(line["memory_limit_from"] != tc.logged && line["memory_limit"] != tc.logged) {
			t.Errorf("%s: logged %v", tc.name, line)
		}
	}
}

// The cgroup's memory.max is read from the process's own cgroup (v2);
// "max", cgroup v1 or no /proc give none.
func TestCgroupMemoryMax(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if v, ok := m[p]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"systemd service", map[string]string{"/proc/self/cgroup": "0::/system.slice/cfindexd.service\n",
			"/sys/fs/cgroup/system.slice/cfindexd.service/memory.max": "1610612736\n"}, 1610612736},
		{"no limit", map[string]string{"/proc/self/cgroup": "0::/user.slice\n", "/sys/fs/cgroup/user.slice/memory.max": "max\n"}, 0},
		{"cgroup v1", map[string]string{"/proc/self/cgroup": "12:memory:/docker/x\n"}, 0},
		{"no /proc", nil, 0},
	} {
		if got := hostres.CgroupMemoryMax(files(tc.files)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
