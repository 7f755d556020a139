// Package netparams is the one table of the networks cfindexd can follow:
// for each chain name an operator types (Bitcoin Core's -chain= names, plus
// btcd's simnet, and the aliases mainnet, testnet and testnet3) it gives
// btcd's consensus parameters, the node's default RPC and P2P ports (Core's
// and btcd's), where Core keeps its cookie below its datadir, and
// cfindexd's own default P2P and HTTP ports; and which network a P2P
// message's magic belongs to (ByMagic), named for messages by Label.
//
// cfindexd's ports are chosen so that it runs on the same host as bitcoind
// or btcd of the same network with default settings: none of them is a
// default P2P or RPC port of either.
//
// The table is data only: it imports nothing of the module.
package netparams
