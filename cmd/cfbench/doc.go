// Command cfbench measures cfindexd against btcd on a chain it builds
// itself, so one run gives both sides and their ratio on the same machine.
//
//	go run ./cmd/cfbench sync [flags]    catch-up: cfindexd vs btcd's own cfindex
//	go run ./cmd/cfbench serve [flags]   serving getcfilters/getcfheaders to many peers
//	go run ./cmd/cfbench bip37 [flags]   the serve load beside BIP-37 wallets, against itself alone
//	go run ./cmd/cfbench hostile [flags] attacks, one class at a time, well-behaved clients and a BIP-37 wallet beside them
//
// Every subcommand starts btcd through internal/btcdtest on loopback
// ports (the chain from internal/chains: mainnet-shaped and cached, or
// the small tx-rich one), runs the real cfindexd binary as a subprocess
// against it (internal/daemon), samples its CPU and RSS (internal/procstat)
// and prints a table, or JSON with -json. Run `cfbench <subcommand> -h`
// for the flags.
//
// sync times cfindexd from an empty datadir to the node's tip for every
// source (sources.go: txindex with raw blocks over btcd's P2P port, txindex
// over JSON-RPC only, the blocks-dir source on a blocks directory written
// from the chain), checks the store it left against btcd's own index, runs
// one source again in process under the profiler (profile.go, the
// follower wired as in cmd/cfindexd), runs the blocks-dir source on the
// recorded Core blocks directory (fixture.go), measures each source's node
// floor (floor.go: the same fetches with nothing filtered or stored), and
// times btcd rebuilding its own filter index (btcdindex.go); with
// -sp-compare, also with the silent-payment index (internal/spbench).
//
// serve and bip37 drive light-client load (internal/load) and compare
// every answer byte for byte with what wire encodes from btcd's filters;
// with -baseline another cfindexd binary is measured in alternation.
// hostile gives each attack class (internal/attack) a fresh cfindexd on
// the store one catch-up built, so the peak RSS is the class's own, and
// judges every goal of each class (refusals and p99 of each well-behaved
// client, the honest BIP-37 wallet against its baseline measured in the
// same run, peak RSS, the daemon up, every answer byte-equal to btcd's).
//
// Measurement choices: sync runs cfindexd with its listeners off, so only
// the catch-up is measured, and names the source explicitly ("auto" could
// find another node on a shared machine). A daemon's peak RSS is its
// VmHWM, not rusage's ru_maxrss, which carries cfbench's own peak into the
// child. serve connects its peers a few at a time, because btcd drops a
// source /24 with too many handshakes in progress.
//
// cfbench owns only measuring and reporting. It must not change how
// cfindexd works (it runs the binary, or in process the same indexer
// wiring as cmd/cfindexd), keep package-level state, or talk to anything
// but 127.0.0.1. It must run from inside the module: it builds
// cmd/cfindexd and btcd with the go command.
package main
