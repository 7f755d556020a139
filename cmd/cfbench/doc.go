// Command cfbench measures cfindexd against btcd on a chain it builds
// itself, so one run gives both sides and their ratio on the same machine.
//
//	go run ./cmd/cfbench sync [flags]   catch-up: cfindexd vs btcd's own cfindex
//	go run ./cmd/cfbench serve [flags]  serving getcfilters/getcfheaders to many peers
//	go run ./cmd/cfbench bip37 [flags]  the serve load beside BIP-37 wallets, against itself alone
//
// sync builds the chain, runs the real cfindexd binary against btcd into an
// empty datadir and times it to the node's tip (wall time from its JSON log,
// CPU and peak RSS from its rusage), runs the same catch-up in process
// (indexer.Follower wired as in cmd/cfindexd) under the CPU profiler and
// checks every filter against btcd's, then stops btcd, runs it once with
// --dropcfindex and times btcd rebuilding its own filter index from its log.
// serve has N peers (raw wire clients, one request in flight each) ask for
// 1,000-block getcfilters and 2,000-block getcfheaders ranges from a fixed
// seed, first from cfindexd, then from btcd, over the same chain. bip37
// runs serve's load against one cfindexd (--peerbloomfilters) twice: alone,
// then beside BIP-37 wallets (realistic filters, n = 200 at p = 0.0001 with
// 5 % noise) that ask for filtered blocks of random stretches of the chain
// in batches, and reports the BIP-157 throughput ratio (goal ≥ 70 %) and
// cfindexd's RSS under the mixed load (goal ≤ 250 MB).
// seed, first from cfindexd, then from btcd, over the same chain; with
// -baseline another cfindexd binary (an older build) serves the same chain
// too and is measured in alternation with the one under test for -rounds
// rounds, medians and per-round ratios reported. Every answer is compared
// byte for byte (checksums included) with what wire encodes from btcd's
// own filters (getcfilter over RPC, fetched before the load), and the
// server's and the load generator's CPU time per filter served are
// reported beside the rates.
//
// Measurement choices: sync runs cfindexd with its P2P and HTTP listeners
// off (--listen= --httplisten=), so only the catch-up is measured, and by
// default (-nodep2p=true) with --nodep2p=<btcd's P2P address>, so raw
// blocks come over btcd's P2P port and not as hex inside JSON (the
// in-process run does the same; -nodep2p=false measures JSON-RPC only); serve
// connects its peers four at a time, because btcd v0.26.2 drops a source
// /24 with more than eight handshakes in progress (internal/inbound), and
// reads answers as raw frames in place in each peer's read buffer and
// checks them by comparing bytes with the expected frames (the cfheaders
// checksums precomputed for every range a peer can ask for), never by
// decoding or hashing, so the load generator's own CPU, on the same
// machine, stays small.
//
// Every subcommand starts btcd (simnet, --txindex) through internal/btcdtest
// on loopback ports, builds a transaction-rich chain with it, runs the real
// cfindexd binary as a subprocess against it, and prints a table (or JSON
// with -json). Run `cfbench <subcommand> -h` for the flags.
//
// cfbench owns only measuring and reporting. It must not change how
// cfindexd works (it runs the binary, or in-process the same indexer wiring
// as cmd/cfindexd for the CPU profile), keep package-level state, or talk
// to anything but 127.0.0.1. It must run from inside the module: it builds
// cmd/cfindexd and btcd with the go command.
package main
