package p2p

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/msgread"
)

// MaxHeadersResults is Core's MAX_HEADERS_RESULTS: headers per message.
const MaxHeadersResults = 2000

// handleGetHeaders answers with Core's semantics: from the first locator
// hash on the active chain (genesis when none is), up to MaxHeadersResults
// headers that follow it, ending early at the hash stop. An empty locator
// asks for the stop block's header alone. More than msgread.MaxLocatorSize locator
// hashes disconnect the peer without penalty, as in Core. The answer (up
// to 160 KB) is built and encoded under a filter-work slot, so that the
// transient memory of many such answers at once stays bounded.
func handleGetHeaders(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetHeaders, emit emitFunc) error {
	if len(m.BlockLocatorHashes) > msgread.MaxLocatorSize {
		return invalidRequest("getheaders locator of %d hashes, limit %d", len(m.BlockLocatorHashes), msgread.MaxLocatorSize)
	}
	return env.answerUnderFilterWork(ctx, st, emit, func() (outbound, error) {
		resp, err := buildHeaders(env, st, m)
		if err != nil || resp == nil {
			return outbound{}, err
		}
		return env.encode(st, resp)
	})
}

// buildHeaders returns the headers answering m (nil: no answer).
func buildHeaders(env *handlerEnv, st *peerState, m *wire.MsgGetHeaders) (*wire.MsgHeaders, error) {
	resp := wire.NewMsgHeaders()
	if len(m.BlockLocatorHashes) == 0 {
		hdr, _, err := env.view.HeaderByHash(m.HashStop)
		if err != nil {
			return nil, ignoreNotFound(fmt.Errorf("getheaders stop %s: %w", m.HashStop, err))
		}
		resp.Headers = append(resp.Headers, &hdr)
		st.known.Add(m.HashStop[:])
		return resp, nil
	}
	tip, ok := env.view.Tip()
	if !ok {
		return nil, nil
	}
	fork, forkHash, err := locateFork(env.view, m.BlockLocatorHashes)
	if err != nil {
		return nil, err
	}
	if forkHash != nil {
		st.known.Add(forkHash[:])
	}
	if fork < tip.Height {
		end := min(tip.Height, fork+MaxHeadersResults)
		// The answer ends early at the hash stop when it is an active block
		// within the range: one look-up instead of hashing every header.
		stopHeight, active, err := env.view.HeightOf(m.HashStop)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("getheaders stop %s: %w", m.HashStop, err)
		case active && stopHeight > fork && stopHeight < end:
			end = stopHeight
		}
		hdrs, err := env.view.Headers(fork+1, end)
		if err != nil {
			return nil, ignoreNotFound(fmt.Errorf("getheaders %d..%d: %w", fork+1, end, err))
		}
		resp.Headers = make([]*wire.BlockHeader, len(hdrs))
		for i := range hdrs {
			resp.Headers[i] = &hdrs[i]
		}
		if n := len(hdrs); n > 0 {
			last := hdrs[n-1].BlockHash()
			st.known.Add(last[:])
		}
	}
	return resp, nil
}

// locateFork returns the height of the first locator hash on the active
// chain and that hash; height 0 and a nil hash when none is (Core then
// starts from genesis).
func locateFork(view ChainView, locator []*chainhash.Hash) (uint32, *chainhash.Hash, error) {
	for _, h := range locator {
		height, active, err := view.HeightOf(*h)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, nil, fmt.Errorf("locate fork: %w", err)
		}
		if active {
			return height, h, nil
		}
	}
	return 0, nil, nil
}
