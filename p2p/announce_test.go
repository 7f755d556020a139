package p2p

import (
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/knownhashes"
)

func TestNewTipsAnnouncedAfterCommitOnly(t *testing.T) {
	view := newFakeView(100, 9)
	srv := startServer(t, testConfig(view))
	invPeer, _ := connect(t, srv.addr)
	hdrPeer, _ := connect(t, srv.addr, wire.NewMsgSendHeaders())

	// The headers peer syncs headers so the server knows what it has.
	gh := wire.NewMsgGetHeaders()
	_ = gh.AddBlockLocatorHash(hashPtr(view.at(0).hash))
	hdrPeer.send(gh)
	if hs := hdrPeer.sync()[0].(*wire.MsgHeaders).Headers; len(hs) != 99 {
		t.Fatalf("%d headers", len(hs))
	}

	// A block the node has but whose filter is not committed is not
	// announced: nothing reaches either peer.
	pending := view.makeBranch(view.tipBlock(), 3)
	for _, c := range []*rawClient{invPeer, hdrPeer} {
		if got := c.sync(); len(got) != 0 {
			t.Fatalf("announcement before commit: %v", got)
		}
	}

	// Commit: the headers peer gets the headers, the inv peer an inv of the tip.
	view.commit(pending...)
	tip := pending[2]
	hm, ok := hdrPeer.read().(*wire.MsgHeaders)
	if !ok || len(hm.Headers) == 0 {
		t.Fatalf("headers peer got %v", hm)
	}
	// The announcement may come as one message of 3 headers; every
	// announced header must be committed when it arrives.
	for _, h := range hm.Headers {
		if _, _, err := view.HeightOf(h.BlockHash()); err != nil {
			t.Fatalf("announced %s before commit", h.BlockHash())
		}
	}
	if hm.Headers[len(hm.Headers)-1].BlockHash() != tip.hash {
		t.Fatalf("headers announcement does not end at the tip")
	}
	im, ok := invPeer.read().(*wire.MsgInv)
	if !ok || len(im.InvList) != 1 || im.InvList[0].Hash != tip.hash || im.InvList[0].Type != wire.InvTypeBlock {
		t.Fatalf("inv peer got %v", im)
	}

	// A TipChanged without a new tip (or a tip already announced) is not
	// announced again.
	view.touch()
	for _, c := range []*rawClient{invPeer, hdrPeer} {
		if got := c.sync(); len(got) != 0 {
			t.Fatalf("duplicate announcement: %v", got)
		}
	}
}

func TestAnnouncementFallsBackToInv(t *testing.T) {
	view := newFakeView(30, 10)
	tip, _ := view.Tip()
	tests := []struct {
		name      string
		knownAt   int // height known to the peer, -1 none
		headers   bool
		wantCount int // headers in the announcement; 0 means inv
	}{
		{"inv peer", 28, false, 0},
		{"parent known", 28, true, 1},
		{"8 behind", 21, true, 8},
		{"9 behind", 20, true, 0},
		{"nothing known", -1, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			known := knownhashes.NewRolling(1000, 0.01, 1, 2)
			if tc.knownAt >= 0 {
				known.Add(view.at(uint32(tc.knownAt)).hash[:])
			}
			msg, err := announcement(view, tip, known, tc.headers)
			if err != nil {
				t.Fatal(err)
			}
			switch m := msg.(type) {
			case *wire.MsgHeaders:
				if len(m.Headers) != tc.wantCount {
					t.Fatalf("%d headers, want %d", len(m.Headers), tc.wantCount)
				}
				if m.Headers[len(m.Headers)-1].BlockHash() != tip.Hash {
					t.Fatal("headers do not end at tip")
				}
			case *wire.MsgInv:
				if tc.wantCount != 0 || m.InvList[0].Hash != tip.Hash {
					t.Fatalf("inv %v, want %d headers", m.InvList, tc.wantCount)
				}
			default:
				t.Fatalf("got %T", msg)
			}
			if again, _ := announcement(view, tip, known, tc.headers); again != nil {
				t.Fatal("tip announced twice")
			}
		})
	}
}
