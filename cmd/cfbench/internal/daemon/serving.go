package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
)

// WaitServing waits, two minutes at most, until cfindexd answers a P2P
// handshake on p2pAddr and its readiness check over HTTP on httpAddr.
func (p *Proc) WaitServing(ctx context.Context, p2pAddr, httpAddr string, params *chaincfg.Params) error {
	deadline := time.Now().Add(2 * time.Minute)
	client := &http.Client{Timeout: 5 * time.Second}
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.Exited():
			return fmt.Errorf("cfindexd exited at start (%v); last line: %s", p.ExitErr(), p.LastLine())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		peer, err := load.Dial(p2pAddr, params, 1, 5*time.Second)
		if err != nil {
			last = err
			continue
		}
		peer.Close()
		resp, err := client.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = errors.New("readyz: " + resp.Status)
	}
	return fmt.Errorf("cfindexd not serving within 2 minutes: %w", last)
}
