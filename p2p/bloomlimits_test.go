package p2p

import (
	"bytes"
	"context"
	"net/netip"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
)

// rawFilterLoad is a filterload frame of any size and k, built by hand
// (wire refuses to encode what Core's limits refuse).
func rawFilterLoad(size int, k uint32) []byte {
	payload := append(varInt(uint64(size)), make([]byte, size)...)
	payload = append(payload, byte(k), byte(k>>8), byte(k>>16), byte(k>>24), 1, 0, 0, 0, byte(wire.BloomUpdateAll))
	return rawFrame(wire.CmdFilterLoad, payload)
}

// rawFilterAdd is a filteradd frame of an element of n bytes.
func rawFilterAdd(n int) []byte {
	return rawFrame(wire.CmdFilterAdd, append(varInt(uint64(n)), make([]byte, n)...))
}

// varInt is a CompactSize.
func varInt(n uint64) []byte {
	var buf bytes.Buffer
	_ = wire.WriteVarInt(&buf, 0, n)
	return buf.Bytes()
}

// filterOfFill returns a filter of size bytes and one hash function with
// exactly bits bits set (bit i for i < bits).
func filterOfFill(size, bits int) *wire.MsgFilterLoad {
	data := make([]byte, size)
	for i := range bits {
		data[i/8] |= 1 << (i % 8)
	}
	return wire.NewMsgFilterLoad(data, 1, 0, wire.BloomUpdateNone)
}

// elementSettingNewBit returns an element that sets a bit f does not have.
func elementSettingNewBit(t *testing.T, f *bloom.Filter) []byte {
	t.Helper()
	for i := range 100000 {
		e := []byte{byte(i), byte(i >> 8), byte(i >> 16), 0xab}
		if !f.Contains(e) {
			return e
		}
	}
	t.Fatal("no element sets a new bit")
	return nil
}

// Every BIP-37 limit and policy key, from the wire: what the peer sent and
// what it gets. Core's limits are protocol violations (disconnect and
// discourage, as Core's Misbehaving); this server's policy (the estimated
// false-positive rate, the update rate) refuses well-formed requests, so
// it disconnects without penalty, as the P2P ban policy treats every
// invalid request.
func TestBloomLimitsFromTheWire(t *testing.T) {
	c := newBloomChain(t, 25, 2, 4)
	type step struct {
		frame []byte       // sent raw, or
		msg   wire.Message // sent encoded
		// getBlocks asks for this many filtered blocks (and reads them).
		getBlocks int
		extend    int // the chain grows this many blocks
	}
	load := func(m *wire.MsgFilterLoad) step { return step{msg: m} }
	wallet := walletFilter(t, wire.BloomUpdateAll, c.keys[3][0]).MsgFilterLoad()
	small := filterOfFill(2, 1) // 16 bits, 1 set: estimated rate 1/16
	smallModel, _ := bloom.Load(small)
	tests := []struct {
		name  string
		cfg   func(*Config)
		steps []step
		// ok: the peer is still served at the end; else disconnected,
		// discouraged or not.
		ok          bool
		discouraged bool
		cause       string
	}{
		{"filterload of 36,001 bytes (Core: too-large bloom filter)", nil, []step{{frame: rawFilterLoad(36_001, 5)}}, false, true, "misbehaving"},
		{"filterload of 36,000 bytes", func(c *Config) { c.Bloom.MaxFPR = 1 }, []step{{frame: rawFilterLoad(36_000, 5)}}, true, false, ""},
		{"filterload with 51 hash functions (Core: too-large bloom filter)", nil, []step{{frame: rawFilterLoad(100, 51)}}, false, true, "misbehaving"},
		{"filteradd of 521 bytes (Core: bad filteradd message)", nil, []step{load(wallet), {frame: rawFilterAdd(521)}}, false, true, "misbehaving"},
		{"filteradd of 520 bytes", nil, []step{load(wallet), {frame: rawFilterAdd(520)}}, true, false, ""},
		{"filteradd without a filter (Core: bad filteradd message)", nil, []step{{msg: wire.NewMsgFilterAdd([]byte{1})}}, false, true, "misbehaving"},
		{"filteradd after filterclear", nil, []step{load(wallet), {msg: wire.NewMsgFilterClear()}, {msg: wire.NewMsgFilterAdd([]byte{1})}}, false, true, "misbehaving"},
		{"filterload matching nearly everything (every bit set)", nil, []step{load(filterOfFill(100, 800))}, false, false, "invalid_request"},
		{"zero-byte filterload (matches everything)", nil, []step{load(wire.NewMsgFilterLoad(nil, 0, 0, 0))}, false, false, "invalid_request"},
		{"filterload at bloommaxfpr", func(c *Config) { c.Bloom.MaxFPR = 1.0 / 16 }, []step{load(small)}, true, false, ""},
		{"filteradd taking the filter over bloommaxfpr", func(c *Config) { c.Bloom.MaxFPR = 1.0 / 16 },
			[]step{load(small), {msg: wire.NewMsgFilterAdd(elementSettingNewBit(t, smallModel))}}, false, false, "invalid_request"},
		{"wallet filter (p = 0.0001) under bloomminfpr 0.01", func(c *Config) { c.Bloom.MinFPR = 0.01 }, []step{load(wallet)}, false, false, "invalid_request"},
		{"filter at 1/16 over bloomminfpr 0.01", func(c *Config) { c.Bloom.MinFPR = 0.01 }, []step{load(small)}, true, false, ""},
		{"updates within the allowance", func(c *Config) { c.Bloom.UpdateAllowance = 3 },
			[]step{load(wallet), {msg: wire.NewMsgFilterAdd([]byte{1})}, load(wallet)}, true, false, ""},
		{"one update over the allowance", func(c *Config) { c.Bloom.UpdateAllowance = 3 },
			[]step{load(wallet), {msg: wire.NewMsgFilterAdd([]byte{1})}, load(wallet), {msg: wire.NewMsgFilterAdd([]byte{2})}}, false, false, "invalid_request"},
		{"10 filtered blocks served earn an update", func(c *Config) { c.Bloom.UpdateAllowance = 3 },
			[]step{load(wallet), load(wallet), load(wallet), {getBlocks: 10}, load(wallet)}, true, false, ""},
		{"9 filtered blocks served do not", func(c *Config) { c.Bloom.UpdateAllowance = 3 },
			[]step{load(wallet), load(wallet), load(wallet), {getBlocks: 9}, load(wallet)}, false, false, "invalid_request"},
		{"10 new blocks earn an update", func(c *Config) { c.Bloom.UpdateAllowance = 3 },
			[]step{load(wallet), load(wallet), load(wallet), {extend: 10}, load(wallet)}, true, false, ""},
		{"filterclear is not an update", func(c *Config) { c.Bloom.UpdateAllowance = 1 },
			[]step{load(wallet), {msg: wire.NewMsgFilterClear()}, {msg: wire.NewMsgFilterClear()}}, true, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newBloomChain(t, 25, 2, 4) // each case grows its own chain
			cfg := c.bloomConfig()
			m := newCountingMetrics()
			cfg.Metrics = m
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			srv := startServer(t, cfg)
			cl, _ := connect(t, srv.addr)
			served := 0
			for _, s := range tc.steps {
				switch {
				case s.frame != nil:
					if err := cl.writeRaw(s.frame); err != nil {
						t.Fatal(err)
					}
				case s.msg != nil:
					cl.send(s.msg)
				case s.getBlocks > 0:
					gd := wire.NewMsgGetData()
					for h := served; h < served+s.getBlocks; h++ {
						_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, hashPtr(c.blocks[h].BlockHash())))
					}
					served += s.getBlocks
					cl.send(gd)
					cl.sync()
				case s.extend > 0:
					cl.sync() // the server took its start tip
					tip, _ := c.view.Tip()
					c.view.extend(s.extend)
					waitFor(t, "the view to grow", ioTimeout, func() bool { t2, _ := c.view.Tip(); return t2.Height == tip.Height+uint32(s.extend) })
				}
			}
			ip := netip.MustParseAddr("127.0.0.1")
			if tc.ok {
				cl.send(wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, hashPtr(c.blocks[2].BlockHash())))
				answered := false
				for _, m := range cl.sync() {
					_, ok := m.(*wire.MsgCFCheckpt)
					answered = answered || ok
				}
				if !answered {
					t.Fatal("no cfcheckpt after the steps: the peer is not served")
				}
				if m.disconnects("misbehaving")+m.disconnects("invalid_request") != 0 {
					t.Fatal("a disconnect was counted")
				}
				return
			}
			cl.expectDisconnect()
			waitFor(t, tc.cause+" disconnect", ioTimeout, func() bool { return m.disconnects(tc.cause) == 1 })
			if got := srv.Discouraged(ip); got != tc.discouraged {
				t.Fatalf("discouraged %v, want %v", got, tc.discouraged)
			}
		})
	}
}

// A whitelisted peer's protocol violation disconnects it without
// discouraging its address, as for every violation.
func TestBloomMisbehaviourOfWhitelistedPeer(t *testing.T) {
	c := newBloomChain(t, 3, 1, 5)
	cfg := c.bloomConfig()
	cfg.Whitelist = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	srv := startServer(t, cfg)
	cl, _ := connect(t, srv.addr)
	cl.send(wire.NewMsgFilterAdd([]byte{1}))
	cl.expectDisconnect()
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("whitelisted address discouraged")
	}
}

// Filters Core and btcd treat differently (bloom/doc.go), served as Core:
// a zero-byte filter (accepted when bloommaxfpr is 1) matches every
// transaction, and nFlags 5 is BLOOM_UPDATE_ALL (Core masks the reserved
// bits), so a spend of a matched output in a later block matches.
func TestBloomServesCoresSemanticsWhereBtcdDiffers(t *testing.T) {
	c := newBloomChain(t, 6, 4, 6)
	cfg := c.bloomConfig()
	cfg.Bloom.MaxFPR = 1
	srv := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*ioTimeout)
	defer cancel()

	p := dialBloom(t, srv.addr, false)
	if err := p.Send(ctx, wire.NewMsgFilterLoad(nil, 0, 0, wire.BloomUpdateNone)); err != nil {
		t.Fatal(err)
	}
	got, err := p.GetFilteredBlocks(ctx, c.hashes(0, 5), false)
	if err != nil {
		t.Fatal(err)
	}
	for h, fb := range got {
		if len(fb.Txs) != len(c.blocks[h].Transactions) {
			t.Fatalf("zero-byte filter: block %d sent %d of %d transactions (btcd sends none)", h, len(fb.Txs), len(c.blocks[h].Transactions))
		}
	}

	// Block 2's transactions spend block 1's outputs in order: watch an
	// output of block 1 by its key, with flags 5.
	key := c.keys[1][1]
	p2 := dialBloom(t, srv.addr, false)
	f := walletFilter(t, 5, key)
	if err := p2.LoadFilter(ctx, f); err != nil {
		t.Fatal(err)
	}
	got, err = p2.GetFilteredBlocks(ctx, c.hashes(1, 2), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0].Txs) != 1 || len(got[1].Txs) != 1 {
		t.Fatalf("flags 5: %d and %d transactions matched in blocks 1 and 2, want the payment and its spend (btcd updates nothing)", len(got[0].Txs), len(got[1].Txs))
	}
	spent := got[1].Txs[0].TxIn[0].PreviousOutPoint
	if spent.Hash != got[0].Txs[0].TxHash() {
		t.Fatalf("block 2's match does not spend block 1's")
	}
}
