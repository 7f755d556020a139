package p2p

import "fmt"

// DefaultPort returns the default listening port of cfindexd's P2P server for
// chain, which may be given as Bitcoin Core names it (getblockchaininfo
// "chain": main, test, testnet4, signet, regtest) or as btcd/chaincfg names it
// (mainnet, testnet3, simnet).
//
// The ports are chosen so that cfindexd can run on the same host as bitcoind
// or btcd of the same network with default settings: none of them is a
// default P2P or RPC port of either (bitcoind P2P 8333/18333/48333/38333/
// 18444, RPC 8332/18332/48332/38332/18443; btcd P2P adds simnet 18555 and
// RPC 8334/18334/18556).
//
//	main     8383
//	test     18383
//	testnet4 48383
//	signet   38383
//	regtest  18484
//	simnet   18585
func DefaultPort(chain string) (uint16, error) {
	switch chain {
	case "main", "mainnet":
		return 8383, nil
	case "test", "testnet", "testnet3":
		return 18383, nil
	case "testnet4":
		return 48383, nil
	case "signet":
		return 38383, nil
	case "regtest":
		return 18484, nil
	case "simnet":
		return 18585, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownChain, chain)
}
