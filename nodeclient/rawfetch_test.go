package nodeclient

import (
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
)

// A failed block fetch names the block once and the call once: the P2P
// server logs these errors for peers' getdata ("block <hash>: getblock:
// RPC error -5 ...", not "getblock <hash>: getblock: ...").
func TestBlockFetchErrorsNameCallOnce(t *testing.T) {
	fx := corefixture.Load(t)
	c, _ := newFixtureClient(t, fx, corefixture.Options{})
	ctx := testCtx(t)
	unknown := chainhash.Hash{7}
	_, err1 := c.GetRawBlock(ctx, unknown)
	_, err2 := c.GetRawBlocks(ctx, []chainhash.Hash{fx.Tip, unknown})
	for _, err := range []error{err1, err2} {
		if !errors.Is(err, ErrBlockNotFound) {
			t.Fatalf("unknown block: %v", err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "block "+unknown.String()+": ") || strings.Count(msg, "getblock") != 1 {
			t.Errorf("error %q: want the block named once, then the call once", msg)
		}
	}
}
