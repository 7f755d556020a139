package main

import (
	"context"
	"fmt"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"os"
)

// workspace is what every subcommand sets up first: a scratch directory,
// the directory for profiles and logs, and the cfindexd binary to run.
type workspace struct {
	work, out, binary string
	cleanup           func()
}

// newWorkspace creates the scratch directory (kept when keep is set), the
// output directory (outFlag, or a new temporary one) and builds cfindexd
// unless prebuilt names a binary.
func newWorkspace(ctx context.Context, kind string, keep bool, outFlag, prebuilt string, say func(string, ...any)) (*workspace, error) {
	work, err := os.MkdirTemp("", "cfbench-"+kind+"-")
	if err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	ws := &workspace{work: work, binary: prebuilt, cleanup: func() { os.RemoveAll(work) }}
	if keep {
		say("work directory %s (kept)", work)
		ws.cleanup = func() {}
	}
	if ws.out, err = outDir(outFlag); err != nil {
		ws.cleanup()
		return nil, err
	}
	if ws.binary == "" {
		say("building cfindexd")
		if ws.binary, err = daemon.Build(ctx, work); err != nil {
			ws.cleanup()
			return nil, err
		}
	}
	return ws, nil
}
