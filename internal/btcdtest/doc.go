// Package btcdtest runs a real btcd (the version go.mod pins as a tool) for
// integration tests and drives it: a minimal JSON-RPC client, block
// generation, a key-based test wallet that builds and signs every standard
// script type, a builder for transaction-rich chains, and a miner for side
// branches submitted with submitblock. btcd also serves as the oracle for
// BIP-157/158: CFilter and CFilterHeader return its filters and headers.
//
// What it owns:
//   - building btcd once per machine into os.UserCacheDir()/cfindexd-test/
//     (guarded by a file lock so parallel test binaries build it once);
//   - the btcd process: loopback ports only, its own datadir, stopped by PID
//     (SIGTERM, then SIGKILL) from tb.Cleanup, its output kept in
//     the datadir (btcd.out.log) and its tail printed when the test failed;
//   - the same without a testing.TB for programs (cmd/cfbench): BuildBinary,
//     StartNode, Node.Launch and Node.RunOnce return errors, and the caller
//     stops the node; Binary, Start and Restart are thin wrappers over them;
//   - deterministic test keys and transactions (fixed seeds).
//
// The mainnet-shaped chain (generated, cached and loaded) is its own
// package, internal/btcdtest/mainnetchain, built on this one.
//
// What it must not do: it is test and benchmark code, imported from _test.go
// files and cmd/cfbench, never from production packages; it holds no
// package-level mutable state; it never talks to anything but 127.0.0.1; it
// does not share code with package nodeclient, so each can check the other.
//
// Two ways to mine:
//   - Node.Generate uses btcd's own miner (`generate`, coinbases to the
//     node's --miningaddr, which is Node.Wallet's). btcd randomises the
//     coinbase extra nonce, so those chains are not reproducible.
//   - BuildTxRichChain and MineBlockOn/Node.MineOn assemble and solve blocks
//     here and hand them over with submitblock; coinbases are deterministic,
//     so a fresh node with a given wallet seed always gets the same
//     transactions (only timestamps, hence block hashes, differ).
//
// Quirks of btcd that callers must know:
//   - regtest wipes its database on every start, so Restart on regtest comes
//     back at genesis; use simnet (Options.Net = "simnet") when a test needs
//     the chain to survive a restart;
//   - on simnet segwit and taproot activate only by BIP-9 signalling (active
//     from height 300 when every block signals); BuildTxRichChain mines past
//     that first; MineBlockOn blocks signal;
//   - btcd wants a "jsonrpc" field in every request, closes the connection
//     after every HTTP request, has no getblock verbosity 3, no ZMQ and no
//     REST interface, and its verbose getblock/getblockheader refuse
//     side-branch blocks (BlockHeader and MineOn fall back to the BIP-34
//     coinbase height);
//   - getcfilter returns the BIP-158 filter in wire form (CompactSize N
//     prefix); getcfilterheader prints the header byte-reversed like a block
//     hash, which CFilterHeader undoes (pinned by TestBuildTxRichChain).
package btcdtest
