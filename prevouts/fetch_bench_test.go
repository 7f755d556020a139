package prevouts

import (
	"testing"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// BenchmarkFetchBlock compares the three prevout modes on the same block
// (h109: 14-input consolidation + 25-output batch) against the replay
// server, so one run gives their ratio.
func BenchmarkFetchBlock(b *testing.B) {
	fx := corefixture.Load(b)
	srv := corefixture.NewServer(b, fx, corefixture.Options{})
	c, err := nodeclient.NewClient(nodeclient.Config{Host: srv.Host(), CookieFile: srv.CookieFile()}, testLoggerB(b))
	if err != nil {
		b.Fatal(err)
	}
	h, _ := fx.ActiveHash(109)
	for _, mode := range []string{ModeREST, ModeGetBlock3, ModeTxIndex} {
		b.Run(mode, func(b *testing.B) {
			src, _ := NewSource(c, mode, SourceOptions{ScriptCacheBytes: -1})
			ctx := b.Context()
			for b.Loop() {
				if _, _, err := src.FetchBlock(ctx, h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
