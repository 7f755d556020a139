package bip37

import (
	"errors"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/msgread"
)

// Filter updates are spent from the allowance, earned back one per
// UpdateBlocks blocks the chain grows, and refused over the rate as an
// invalid request; Core's limits are misbehaviour.
func TestFilterUpdateBudget(t *testing.T) {
	s := New(Config{UpdateAllowance: 2, UpdateBlocks: 10}.WithDefaults(), Env{Now: time.Now})
	p := s.NewPeer(blockproxy.Requester{})
	p.Start(100, false)
	load := wire.NewMsgFilterLoad(make([]byte, 64), 5, 0, wire.BloomUpdateNone)
	for i := range 2 {
		if err := s.FilterLoad(p, load, 100); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	var ir *InvalidRequestError
	if err := s.FilterLoad(p, load, 109); !errors.As(err, &ir) {
		t.Fatalf("update over the allowance: %v", err)
	}
	if err := s.FilterLoad(p, load, 110); err != nil {
		t.Fatalf("update earned by 10 blocks: %v", err)
	}
	if !p.Loaded() {
		t.Fatal("no filter loaded")
	}
	if err := s.FilterAdd(p, wire.NewMsgFilterAdd(make([]byte, 521)), 110); !errors.Is(err, msgread.ErrMisbehaving) {
		t.Fatalf("filteradd of 521 bytes: %v", err)
	}
	s.FilterClear(p)
	if err := s.FilterAdd(p, wire.NewMsgFilterAdd([]byte{1}), 200); !errors.Is(err, msgread.ErrMisbehaving) {
		t.Fatalf("filteradd without a filter: %v", err)
	}
}
