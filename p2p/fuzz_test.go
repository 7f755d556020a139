package p2p

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/testtx"
	"github.com/cfindexd/cfindexd/p2p/bip37"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// decodableCommands are the commands msgread.DecodePayload accepts, indexed by the
// fuzzer's first byte.
var decodableCommands = []string{
	wire.CmdVersion, wire.CmdVerAck, wire.CmdSendAddrV2, wire.CmdWTxIdRelay, wire.CmdSendHeaders,
	wire.CmdFeeFilter, wire.CmdPing, wire.CmdPong, wire.CmdGetAddr, wire.CmdGetHeaders,
	wire.CmdGetCFilters, wire.CmdGetCFHeaders, wire.CmdGetCFCheckpt, wire.CmdGetData, wire.CmdInv, wire.CmdTx,
	wire.CmdNotFound, wire.CmdFilterLoad, wire.CmdFilterAdd, wire.CmdFilterClear, wire.CmdMemPool,
	wire.CmdGetBlocks,
}

// payloadOf serialises msg for the seed corpus.
func payloadOf(msg wire.Message) []byte {
	var b bytes.Buffer
	_ = msg.BtcEncode(&b, wire.ProtocolVersion, wire.WitnessEncoding)
	return b.Bytes()
}

func commandIndex(cmd string) byte {
	for i, c := range decodableCommands {
		if c == cmd {
			return byte(i)
		}
	}
	panic(cmd)
}

// fuzzEnv is a handler environment over a small fake chain with a stale
// branch, a node with some blocks, transaction relay and BIP-37 serving on.
func fuzzEnv(view *fakeView) *handlerEnv {
	node := &fakeNode{blocks: map[chainhash.Hash]*wire.MsgBlock{}}
	for h := uint32(0); h < 3; h++ {
		node.blocks[view.at(h).hash] = blockFor(view.at(h))
	}
	env := fuzzEnvOf(view, node)
	env.bloom = bip37.New(bip37.Config{Enabled: true}.WithDefaults(), bip37.Env{Net: env.net, Blocks: blockproxy.NewDecodedCache(env.blocks, bip37.DefaultFilteredBlockCacheBytes, peerpolicy.WallClock(env.now)), Log: env.log, Now: env.now, NotFound: ErrNotFound})
	return env
}

func fuzzEnvOf(view *fakeView, node *fakeNode) *handlerEnv {
	return &handlerEnv{
		view:       view,
		net:        chaincfg.RegressionNetParams.Net,
		filterWork: peerpolicy.NewFairQueue(1, filterWorkHalfLife, peerpolicy.WallClock(time.Now)),
		blocks:     blockproxy.New(node, blockproxy.NewGate(1, nil), 1<<20, ProtocolVersion),
		upload:     peerpolicy.NewUploadTarget(1),
		relay:      node,
		relayWait:  DefaultTxRelayTimeout,
		relayRate:  peerpolicy.NewSharedBucket(1000, 1000),
		metrics:    NopMetrics{},
		log:        zerolog.Nop(),
		now:        time.Now,
	}
}

func addFuzzSeeds(f *testing.F, view *fakeView) {
	h := func(n uint32) *chainhash.Hash { return hashPtr(view.at(n).hash) }
	gh := wire.NewMsgGetHeaders()
	_ = gh.AddBlockLocatorHash(h(3))
	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, h(1)))
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeTx, h(1)))
	inv := wire.NewMsgInv()
	_ = inv.AddInvVect(wire.NewInvVect(msgread.InvTypeWTx, h(2)))
	me := wire.NewNetAddressIPPort(nil, 0, 0)
	fgd := wire.NewMsgGetData()
	_ = fgd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, h(1)))
	_ = fgd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredWitnessBlock, h(2)))
	gb := wire.NewMsgGetBlocks(h(40))
	_ = gb.AddBlockLocatorHash(h(3))
	for _, m := range []wire.Message{
		wire.NewMsgGetCFilters(wire.GCSFilterRegular, 1, h(1200)),
		wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, h(1000)),
		wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 5, h(30)),
		wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, h(2100)),
		gh, gd, inv, testtx.Witness(7), testtx.Legacy(8), wire.NewMsgPing(3), wire.NewMsgFeeFilter(10),
		wire.NewMsgVersion(me, me, 1, 2), wire.NewMsgSendHeaders(),
		wire.NewMsgFilterLoad([]byte{0xff, 0x10}, 3, 9, wire.BloomUpdateAll), wire.NewMsgFilterAdd([]byte{1, 2}),
		wire.NewMsgFilterClear(), wire.NewMsgMemPool(), fgd, gb,
	} {
		f.Add(commandIndex(m.Command()), payloadOf(m))
	}
}

// FuzzDispatch decodes untrusted payload bytes as any message the server
// reads and runs its handler against a fake view: it must never panic, and
// every response must be encodable.
func FuzzDispatch(f *testing.F) {
	view := newFakeView(2200, 21)
	view.addStale(view.makeBranch(view.at(1100), 1050)...)
	addFuzzSeeds(f, view)
	f.Fuzz(func(t *testing.T, cmd byte, payload []byte) {
		command := decodableCommands[int(cmd)%len(decodableCommands)]
		msg, err := msgread.DecodePayload(command, payload, wire.ProtocolVersion)
		if err != nil {
			if !errors.Is(err, ErrMisbehaving) {
				t.Fatalf("decode error not classed as misbehaviour: %v", err)
			}
			return
		}
		env := fuzzEnv(view)
		st := newPeerState(1, 2)
		st.bloom = env.bloom.NewPeer(blockproxy.Requester{})
		emit := func(o outbound) error { checkOutbound(t, o); return nil }
		_ = dispatch(context.Background(), env, st, msg, emit)
	})
}

// checkOutbound fails t unless o encodes to a frame wire reads back whole.
func checkOutbound(t *testing.T, o outbound) {
	t.Helper()
	net := chaincfg.RegressionNetParams.Net
	frame := append(bytes.Clone(o.Frame), o.Payload...)
	if o.Frame == nil {
		var err error
		if frame, err = encodeFrame(o.Msg, wire.ProtocolVersion, net, o.Enc); err != nil {
			t.Fatalf("unencodable %s response: %v", o.Msg.Command(), err)
		}
	}
	r := bytes.NewReader(frame)
	_, msg, _, err := wire.ReadMessageWithEncodingN(r, wire.ProtocolVersion, net, wire.WitnessEncoding)
	if err != nil || r.Len() != 0 {
		t.Fatalf("response frame does not read back (%d bytes left): %v", r.Len(), err)
	}
	if o.Command != "" && msg.Command() != o.Command {
		t.Fatalf("frame of %s labelled %s", msg.Command(), o.Command)
	}
}

// FuzzDecodeRoundTrip: decode → encode → decode → encode is stable. (The
// first encode may differ from the input: a version message may omit its
// optional tail, which encodes as zeros.)
func FuzzDecodeRoundTrip(f *testing.F) {
	view := newFakeView(2200, 22)
	addFuzzSeeds(f, view)
	f.Fuzz(func(t *testing.T, cmd byte, payload []byte) {
		command := decodableCommands[int(cmd)%len(decodableCommands)]
		msg, err := msgread.DecodePayload(command, payload, wire.ProtocolVersion)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := msg.BtcEncode(&b, wire.ProtocolVersion, wire.WitnessEncoding); err != nil {
			t.Fatalf("re-encode %s: %v", command, err)
		}
		again, err := msgread.DecodePayload(command, b.Bytes(), wire.ProtocolVersion)
		if err != nil {
			t.Fatalf("decode of re-encoded %s: %v", command, err)
		}
		var b2 bytes.Buffer
		if err := again.BtcEncode(&b2, wire.ProtocolVersion, wire.WitnessEncoding); err != nil {
			t.Fatalf("re-encode %s: %v", command, err)
		}
		if !bytes.Equal(b.Bytes(), b2.Bytes()) {
			t.Fatalf("%s round trip differs:\n%#v\n%#v", command, msg, again)
		}
		if command != wire.CmdVersion && !reflect.DeepEqual(msg, again) {
			t.Fatalf("%s round trip differs:\n%#v\n%#v", command, msg, again)
		}
	})
}
