package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// lookupChain resolves a chain name (Core's, btcd's simnet, and aliases).
func lookupChain(name string) (*chaincfg.Params, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "main", "mainnet":
		return &chaincfg.MainNetParams, nil
	case "test", "testnet", "testnet3":
		return &chaincfg.TestNet3Params, nil
	case "testnet4":
		return &chaincfg.TestNet4Params, nil
	case "signet":
		return &chaincfg.SigNetParams, nil
	case "regtest":
		return &chaincfg.RegressionNetParams, nil
	case "simnet":
		return &chaincfg.SimNetParams, nil
	}
	return nil, fmt.Errorf("unknown chain %q (want main, test, testnet4, signet, regtest or simnet)", name)
}

// headerChain is the peer's best chain as cfscan synced it: headers and
// hashes by height.
type headerChain struct {
	headers []wire.BlockHeader
	hashes  []chainhash.Hash
}

func (c *headerChain) tip() uint32 { return uint32(len(c.hashes) - 1) }

// syncHeaders downloads the peer's headers from genesis with getheaders,
// checking that each links to the previous and meets its own proof-of-work
// target, which must not exceed the network's limit.
func syncHeaders(ctx context.Context, p *p2pclient.Peer, params *chaincfg.Params) (*headerChain, error) {
	genesis := params.GenesisBlock.Header
	c := &headerChain{headers: []wire.BlockHeader{genesis}, hashes: []chainhash.Hash{*params.GenesisHash}}
	if genesis.BlockHash() != *params.GenesisHash {
		return nil, fmt.Errorf("genesis header of %s does not hash to its genesis hash", params.Name)
	}
	for {
		batch, err := p.GetHeaders(ctx, []chainhash.Hash{c.hashes[len(c.hashes)-1]}, chainhash.Hash{})
		if err != nil {
			return nil, fmt.Errorf("getheaders after height %d: %w", c.tip(), err)
		}
		for _, h := range batch {
			height := uint32(len(c.hashes))
			if h.PrevBlock != c.hashes[len(c.hashes)-1] {
				return nil, fmt.Errorf("%w: header at height %d does not extend %s", p2pclient.ErrProtocol, height, c.hashes[len(c.hashes)-1])
			}
			hash := h.BlockHash()
			if err := checkProofOfWork(hash, h.Bits, params); err != nil {
				return nil, fmt.Errorf("header %s at height %d: %w", hash, height, err)
			}
			c.headers = append(c.headers, h)
			c.hashes = append(c.hashes, hash)
		}
		if len(batch) < wire.MaxBlockHeadersPerMsg {
			return c, nil
		}
	}
}

// checkProofOfWork checks hash ≤ the target of bits ≤ the network's limit.
func checkProofOfWork(hash chainhash.Hash, bits uint32, params *chaincfg.Params) error {
	target := headers.CompactToBig(bits)
	if target.Sign() <= 0 || target.Cmp(params.PowLimit) > 0 {
		return fmt.Errorf("%w: target %064x out of range", p2pclient.ErrProtocol, target)
	}
	if headers.HashToBig(&hash).Cmp(target) > 0 {
		return fmt.Errorf("%w: hash above its target", p2pclient.ErrProtocol)
	}
	return nil
}
