package prevouts

import (
	"bytes"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/nodetest"
	"github.com/cfindexd/cfindexd/nodeclient"
)

func testLoggerB(b *testing.B) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.WarnLevel)
}

// newFixtureClient starts a replay server and a cookie-auth client for it.
func newFixtureClient(t *testing.T, fx *corefixture.Fixtures, opts corefixture.Options) (*nodeclient.Client, *corefixture.Server) {
	t.Helper()
	srv := corefixture.NewServer(t, fx, opts)
	cfg := nodeclient.Config{Host: srv.Host(), CookieFile: srv.CookieFile(), Timeout: 5 * time.Second}
	if opts.User != "" {
		cfg = nodeclient.Config{Host: srv.Host(), User: opts.User, Password: opts.Password, Timeout: 5 * time.Second}
	}
	c, err := nodeclient.NewClient(cfg, nodetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, srv
}

func serializeBlock(t *testing.T, blk *wire.MsgBlock) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := blk.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fetchedMatches reports how fb differs from the serialized block raw: its
// bytes, header, hash and output scripts must be raw's as wire decodes
// them. Empty means equal.
func fetchedMatches(fb FetchedBlock, raw []byte) string {
	if !bytes.Equal(fb.Raw, raw) {
		return "block bytes differ"
	}
	var blk wire.MsgBlock
	if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
		return "wire cannot decode the block: " + err.Error()
	}
	if fb.Header != blk.Header || fb.Hash != blk.BlockHash() {
		return "header or hash differs"
	}
	var outs [][]byte
	for _, tx := range blk.Transactions {
		for _, o := range tx.TxOut {
			outs = append(outs, o.PkScript)
		}
	}
	if !nodetest.EqualScripts(fb.OutputScripts, outs) {
		return "output scripts differ"
	}
	return ""
}
