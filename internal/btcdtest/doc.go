// Package btcdtest runs a real btcd (v0.26.2, the `tool` in go.mod) for
// integration tests and drives it: a minimal JSON-RPC client, block
// generation, a key-based test wallet that builds and signs every standard
// script type, a builder for transaction-rich chains, and a miner for side
// branches submitted with submitblock.
//
// What it owns:
//   - building btcd once per machine into os.UserCacheDir()/cfindexd-test/
//     (guarded by a file lock so parallel test binaries build it once);
//   - the btcd process: loopback ports only, its own datadir, stopped by PID
//     (SIGTERM, then SIGKILL after a deadline) from tb.Cleanup, its log kept
//     in the datadir and its tail printed when the test failed;
//   - deterministic test keys and transactions (fixed seeds).
//
// What it must not do: it is test-only code, imported from _test.go files
// and never from production packages; it holds no package-level mutable
// state; it never talks to anything but 127.0.0.1.
//
// Quirks of btcd that callers must know:
//   - regtest wipes its database on every start, so Restart on regtest comes
//     back at genesis; use simnet ("simnet") when a test needs the chain to
//     survive a restart;
//   - on simnet segwit and taproot activate by BIP-9 signalling only (around
//     height 300); BuildTxRichChain mines past activation first;
//   - btcd wants a "jsonrpc" field in every request, has no getblock
//     verbosity 3, no ZMQ and no REST interface;
//   - getcfilter returns the BIP-158 filter in wire form (CompactSize N
//     prefix), getcfilterheader returns the header byte-reversed like a
//     block hash (CFilterHeader undoes that).
package btcdtest
