// Package mainnetchain generates, caches and loads the mainnet-shaped
// chain that benchmarks (cmd/cfbench) and long tests run on: blocks of
// many transactions with mainnet's mix of output scripts, input and output
// counts and coin ages (mix.go), built and signed here on every core
// (keys.go, sign.go: a key sequence and BIP-340 signing of its own, much
// faster than the test wallet's) and handed to a btcdtest node with
// submitblock, which validates every block (Generate).
//
// A generated chain is cached under the user cache directory, one entry
// per generator version, btcd version, shape and seed (LoadOrGenerate):
// btcd's data directory after a clean stop and the chain's blocks in a
// corefiles chain file, genesis first. Callers copy the node's data out
// of the cache (Chain.CopyNodeData) and never write into it; an entry is
// built under a file lock, so concurrent processes build it once.
//
// Same shape and seed give the same transactions (only timestamps, hence
// block hashes, differ between generations). It talks only to the node
// it is given and keeps no package-level mutable state.
package mainnetchain
