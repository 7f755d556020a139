// Command cfbench measures cfindexd against btcd on a chain it builds
// itself, so one run gives both sides and their ratio on the same machine.
//
//	go run ./cmd/cfbench sync [flags]   catch-up: cfindexd vs btcd's own cfindex
//	go run ./cmd/cfbench serve [flags]  serving getcfilters/getcfheaders to many peers
//	go run ./cmd/cfbench bip37 [flags]  the serve load beside BIP-37 wallets, against itself alone
//	go run ./cmd/cfbench hostile [flags] every attack class, a well-behaved client beside it
//
// # sync
//
// sync runs on a mainnet-shaped chain by default (-chain=mainnet): 500
// blocks of 2,000 transactions (-blocks, -txs) with mainnet's mix of
// output scripts (P2WPKH and P2TR most, then P2SH-P2WPKH, P2PKH, 2-of-3
// P2WSH multisig, OP_RETURN, a few P2PK), mostly one or two inputs a
// transaction with some consolidations, and spends of recent and old
// coins (btcdtest.GenerateMainnetChain). The chain is generated once —
// blocks built and signed here on every core and handed to btcd (simnet,
// --txindex) with submitblock — and cached under
// os.UserCacheDir()/cfindexd-bench/<generator version, btcd version,
// shape, seed>/ (-cache): btcd's data directory after a clean stop, and
// blocks.dat, every block genesis first in Core's blk-file framing, for
// tools that write the same chain elsewhere (the blocks-dir writer). Each
// run copies btcd's data into its work directory and starts btcd there,
// so the cache is never written. -chain=rich measures on the small
// tx-rich chain of btcdtest.BuildTxRichChain instead, built every run.
//
// For every source (-sources: txindex with raw blocks over btcd's P2P
// port, txindex over JSON-RPC only, and the blocks-dir source) sync runs
// the real cfindexd binary against btcd into an empty datadir and times it
// to the node's tip (wall time from its JSON log, CPU from its rusage,
// peak RSS from its VmHWM, RSS sampled from /proc every 100 ms, Go's GC
// from gctrace lines), then checks every block hash, filter and filter
// header of the store the run left against btcd's own index (read in
// JSON-RPC batches once). It then runs one source (-profilesource, the
// first by default) once more in process (indexer.Follower wired as in
// cmd/cfindexd) under the CPU profiler, with heap profiles at the tip and
// at the live heap's peak and, with -trace, an execution trace; runs the
// blocks-dir source on the recorded Core v31 blocks directory; measures
// each source's node floor — the same fetches, runs and workers with
// nothing filtered or stored; and finally stops btcd, runs it once with
// --dropcfindex and times btcd rebuilding its own filter index from its
// log. The report gives per source blocks/s, MB/s of block data, filter
// elements/s, CPU milliseconds per block of cfindexd and of btcd, peak
// RSS (anonymous and file-backed parts), RSS over time, the ratio to
// btcd's rebuild, and the goals: cfindexd's best source at least 2×
// btcd's rebuild, the blocks-dir source at least 5× the blocks/s of
// txindex over P2P, peak RSS at most 150 MB in every source.
//
// A source is one entry in syncSources (sources.go): its cfindexd flags
// and how to open it in process.
//
// # The blocks-dir source
//
// btcd has no blocks directory in Core's format, so sync writes one from
// the chain (blocksdir.go): every block of the cached chain's blocks.dat
// (of btcd over RPC for -chain=rich), in order, through
// internal/corefiles — connected on its parent for its undo data, in
// 128 MiB blk/rev pairs (four for the mainnet-shaped chain: 486 MB of blk,
// 80 MB of rev), preallocated in Core's chunks, obfuscated with a fixed
// non-zero xor.dat key — into the work directory, and syncs it to disk
// before measuring. cfindexd then runs with --prevoutsource=blocksdir
// --blocksdir=<dir> --nodep2p=: the files give blocks and spent scripts,
// btcd only the active chain's block hashes (getblockhash batches), as
// Core would beside its own directory; the fallback (btcd's txindex over
// JSON-RPC) is never asked on a complete directory. Writing takes 9-12 s
// on the mainnet-shaped chain, a few percent of a whole run, so it is done
// in every run rather than cached beside the chain: no cache entry to
// keep in step with the writer, and the files are always the writer's
// current output.
//
// The recorded Core v31 directory (testdata/bitcoind-v31-blocksdir: real
// blk/rev/xor files of 204 small regtest blocks, a reorg among them) has
// no node to go with it: sync indexes it in process (fixture.go) with the
// follower wired as in cmd/cfindexd, the blocks-dir source without a
// fallback, and the active chain's hashes from the fixture's chain.json
// in place of getblockhash; every store must equal Core's own filters and
// filter headers, and the three stale blocks, read from the files and
// filtered, Core's too. Its blocks are tiny: it shows the reader on
// Core's bytes, not speed.
//
// # serve
//
// serve has N peers (raw wire clients, one request in flight each) ask for
// 1,000-block getcfilters and 2,000-block getcfheaders ranges from a fixed
// seed, first from cfindexd, then from btcd, over the same chain. bip37
// runs serve's load against one cfindexd (--peerbloomfilters) twice: alone,
// then beside BIP-37 wallets (realistic filters, n = 200 at p = 0.0001 with
// 5 % noise) that ask for filtered blocks of random stretches of the chain
// in batches, and reports the BIP-157 throughput ratio (goal ≥ 70 %) and
// cfindexd's RSS under the mixed load (goal ≤ 250 MB).
//
// With -baseline another cfindexd binary (an older build) serves the same
// chain too and is measured in alternation with the one under test for
// -rounds rounds, medians and per-round ratios reported. Every answer is
// compared byte for byte (checksums included) with what wire encodes from
// btcd's own filters (getcfilter over RPC, fetched before the load), and
// the server's and the load generator's CPU time per filter served are
// reported beside the rates.
//
// # hostile
//
// hostile runs the real cfindexd binary against btcd on the mainnet-shaped
// chain (mainnet-size filters, ~22 KB; -chain=rich for the small tx-rich
// chain) and attacks it, one class of issue 9's table at a time, for
// -duration (30 s) each: huge declared counts as the first frame and
// after verack, 120 peers pipelining getcfilters and never reading, 16
// addresses filling every slot, 20,000 idle HTTP keep-alive connections
// (-httpconns; at most the open file limit, raised to its hard limit,
// less 1,000), 8 slow readers of the bulk filters file, 120 peers asking
// for random blocks, 50,000-entry invs with relaytx on, 3.9 MB of a 4 MB
// tx frame from 120 peers, invalid requests from one address, and
// getheaders from genesis (the corrupt-store half of that row is offline:
// cmd/cfindexd's store-fault tests). Attackers dial from 127.x.y.z
// source addresses (a /16 block per class), never decode what they read,
// and reconnect when the daemon drops them. The attack payloads with huge
// counts are internal/attackwire's, shared with the p2p package's tests.
//
// Each class gets a fresh cfindexd process (both listeners on loopback,
// default limits, relaytx where the class needs it) on the store one
// catch-up built, so the peak RSS (VmHWM, read before SIGTERM) is the
// class's own. Beside the attack, after -settle, a well-behaved client from
// a fresh address (for the invalid-requests class: the attacker's address,
// as behind one NAT) loops getcfilters of 100 blocks and getcfheaders of
// 1,000 over P2P, a REST filter and the bulk filter-headers file over HTTP,
// comparing every byte with btcd's filters; it counts answers, latency
// and refusals (a refused or dropped connection, a timeout, a non-200
// answer, wrong bytes). The report gives per class the peak RSS, the
// client's requests, p50/p99/max and refusals, whether cfindexd stayed up
// and exited 0 on SIGTERM, and what the attack did; then it checks every
// filter and filter header of the store against btcd's. Goals: peak RSS
// ≤ 250 MB in every class, the client never refused, its p99 ≤ 2 s, the
// store intact.
//
// # Measurement choices
//
// sync runs cfindexd with its P2P and HTTP listeners off (--listen=
// --httplisten=), so only the catch-up is measured, and names the source
// with --prevoutsource and --nodep2p (an explicit empty --nodep2p for
// JSON-RPC only: "auto" could find another node on a shared machine).
// A daemon's peak RSS is its VmHWM, not rusage's ru_maxrss: Linux carries
// the peak of the address space a process had before exec into the
// latter, and Go starts children sharing cfbench's, so ru_maxrss is at
// least cfbench's own peak (880 MB after writing the blocks directory).
// serve connects its peers four at a time, because btcd v0.26.2 drops a
// source /24 with more than eight handshakes in progress
// (internal/inbound), and reads answers as raw frames in place and checks
// them by comparing bytes with the expected frames (cfheaders checksums
// precomputed), never by decoding or hashing, so the load generator's own
// CPU, on the same machine, stays small.
//
// Every subcommand starts btcd through internal/btcdtest on loopback
// ports, runs the real cfindexd binary as a subprocess against it, and
// prints a table (or JSON with -json). Run `cfbench <subcommand> -h` for
// the flags.
//
// cfbench owns only measuring and reporting. It must not change how
// cfindexd works (it runs the binary, or in-process the same indexer wiring
// as cmd/cfindexd for the profiles), keep package-level state, or talk to
// anything but 127.0.0.1. It must run from inside the module: it builds
// cmd/cfindexd and btcd with the go command.
package main
