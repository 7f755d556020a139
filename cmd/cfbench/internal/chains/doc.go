// Package chains gives cmd/cfbench the chains it measures on, served by a
// btcdtest node on simnet with --txindex: the small tx-rich chain, mined
// every run (Build), or the mainnet-shaped chain, generated once, cached
// and copied into the run's work directory (StartMainnet); and the same
// chain as a Bitcoin Core blocks directory (WriteBlocksDir: blk/rev pairs
// through internal/corefiles, obfuscated with a fixed non-zero key, synced
// to disk) for the blocks-dir source.
//
// It never writes into the chain cache: each run copies it.
package chains
