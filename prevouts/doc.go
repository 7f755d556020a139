// Package prevouts fetches blocks together with the scripts of the outputs
// they spend, which BIP-158 basic filters need: the prevout sources, their
// detection, and the script cache of the txindex source.
//
// # Sources, fastest first (DetectSource asks the node once and logs its choice)
//
//  0. ModeBlocksDir: beside Bitcoin Core with read access to its blocks
//     directory, blocks and undo data come from Core's files (blockfiles),
//     the node supplying only block hashes; a block not in the files yet
//     comes from the source detection would have picked next.
//  1. ModeREST: Core >= 30 with -rest=1: /rest/block and
//     /rest/spenttxouts, both binary, fetched concurrently.
//  2. ModeGetBlock3: Core >= 23: getblock <hash> 3, decoded as it streams
//     in (getblock3.go). The decoder lives here, not in nodeclient, because
//     what it builds is this package's FetchedBlock and what it checks
//     (one prevout per input, the block's merkle root) is the source's
//     contract; it shares the JSON lexer internal/jsonscan with the
//     client's hex replies. At most one request fewer than the node's
//     -rpcthreads is in flight, so other clients keep a thread.
//  3. ModeTxIndex: btcd with --txindex, or Core with -txindex=1: raw
//     blocks (getblock 0 batches, or over the node's P2P port with
//     nodep2p), then the spent transactions by batched getrawtransaction,
//     each checked to hash to its txid.
//
// A node with none of these gives nodeclient.ErrNoPrevoutSource naming the
// option to turn on; a mode forced through SourceOptions.Force is checked
// the same way.
//
// # Runs, the script cache and run order
//
// The txindex and blocks-directory sources are RunBlockSources: they fetch
// a run of consecutive blocks with one request, stop reading once the run
// holds what they allow themselves (the caller asks for the rest), and
// return FetchedBlocks read in place. The txindex source resolves spent
// scripts from a cache of txid → output scripts (scriptcache.go: bounded
// by its real memory, in slabs without pointers for the collector to scan)
// fed by every block it fetches, asking the node only for what the cache
// lacks.
//
// That cache is the one piece of chain state here: it is only correct and
// cheap if it learns blocks in chain order. Runs fetched at once by several
// workers therefore take turns: the caller, which plans runs in chain
// order, takes one RunTurn per run from a RunOrder (one per catch-up round)
// and passes it to FetchBlocks; a run lets its blocks into the cache only
// once the runs before it did. The order is this package's concern; the
// caller only promises to hand out turns in the order of the chain.
//
// # What it must not do
//
// Write the store, build filters, or trust a block that does not hash to
// the one asked for or match its merkle root.
package prevouts
