package main

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/lightninglabs/neutrino"
	"github.com/lightninglabs/neutrino/headerfs"

	"github.com/cfindexd/cfindexd/internal/lightclient"
)

const (
	// lightSyncTimeout bounds neutrino's sync with cfindexd.
	lightSyncTimeout = 2 * time.Minute
	// rescanTimeout bounds the rescan for the demo payment.
	rescanTimeout = time.Minute
)

// lightClient is an in-process neutrino v0.18.0 whose only peer is
// cfindexd: it never looks up DNS seeds and connects to nothing else.
type lightClient struct {
	cs *lightclient.Client
}

// startLight starts neutrino with a fresh database in dir.
func startLight(dir string, params *chaincfg.Params, peer string) (*lightClient, error) {
	cs, err := lightclient.Start(context.Background(), dir, params, peer)
	if err != nil {
		return nil, err
	}
	return &lightClient{cs: cs}, nil
}

// lightTip is what neutrino has verified: its block-header tip and the
// filter header of that block.
type lightTip struct {
	Height       int32
	Hash         chainhash.Hash
	FilterHeader chainhash.Hash
}

// waitSynced waits until neutrino's block headers reach hash and its
// filter headers reach the same block.
func (l *lightClient) waitSynced(ctx context.Context, hash chainhash.Hash) (lightTip, error) {
	deadline := time.Now().Add(lightSyncTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "nothing yet"
	for {
		best, err := l.cs.BestBlock()
		if err == nil {
			fh, fhHeight, ferr := l.cs.RegFilterHeaders.ChainTip()
			switch {
			case ferr != nil:
				err = ferr
			case best.Hash == hash && int32(fhHeight) == best.Height:
				return lightTip{Height: best.Height, Hash: best.Hash, FilterHeader: *fh}, nil
			default:
				last = fmt.Sprintf("headers at %d, filter headers at %d, %d peers", best.Height, fhHeight, l.cs.ConnectedCount())
			}
		}
		if err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return lightTip{}, fmt.Errorf("neutrino did not sync to %s within %v (%s)", hash, lightSyncTimeout, last)
		}
		select {
		case <-ctx.Done():
			return lightTip{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// lightMatch is a transaction a rescan reported.
type lightMatch struct {
	TxID   chainhash.Hash
	Height int32
}

// rescan runs neutrino's Rescan over blocks (from, to] watching addr: it
// fetches each block's filter from cfindexd, matches it, and downloads
// the blocks that match to find the transactions.
func (l *lightClient) rescan(ctx context.Context, addr address.Address, from, to int32) ([]lightMatch, error) {
	fromHash, err := l.cs.GetBlockHash(int64(from))
	if err != nil {
		return nil, fmt.Errorf("rescan start: %w", err)
	}
	toHash, err := l.cs.GetBlockHash(int64(to))
	if err != nil {
		return nil, fmt.Errorf("rescan end: %w", err)
	}
	var found []lightMatch
	quit := make(chan struct{})
	r := neutrino.NewRescan(&neutrino.RescanChainSource{ChainService: l.cs.ChainService},
		neutrino.StartBlock(&headerfs.BlockStamp{Height: from, Hash: *fromHash}),
		neutrino.EndBlock(&headerfs.BlockStamp{Height: to, Hash: *toHash}),
		neutrino.WatchAddrs(addr),
		neutrino.QuitChan(quit),
		// Runs on the rescan's goroutine, which has ended when its
		// error arrives below.
		neutrino.NotificationHandlers(rpcclient.NotificationHandlers{
			OnFilteredBlockConnected: func(height int32, _ *wire.BlockHeader, txs []*btcutil.Tx) {
				for _, tx := range txs {
					found = append(found, lightMatch{TxID: *tx.Hash(), Height: height})
				}
			},
		}),
	)
	errc := r.Start()
	timer := time.NewTimer(rescanTimeout)
	defer timer.Stop()
	select {
	case err := <-errc:
		if err != nil {
			return nil, fmt.Errorf("rescan: %w", err)
		}
		return found, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("rescan did not finish within %v", rescanTimeout)
	}
	close(quit)
	r.WaitForShutdown()
	return nil, err
}

// peers is how many peers neutrino has, and whether it banned cfindexd.
func (l *lightClient) peers(addr string) (int32, bool) {
	return l.cs.ConnectedCount(), l.cs.IsBanned(addr)
}

// stop stops neutrino and closes its database.
func (l *lightClient) stop() {
	l.cs.Close()
}
