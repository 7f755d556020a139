// Command cfscan finds a wallet's transactions from a peer — cfindexd, or
// any node serving BIP-157 compact filters or BIP-37 Bloom filters — in two
// ways, and reports what each cost and what each revealed:
//
//   - BIP-158 (compact block filters): sync headers (getheaders); fetch the
//     peer's filter-header checkpoints (getcfcheckpt) and filter headers
//     (getcfheaders), chained and checked against every checkpoint and,
//     with a second --peer, against that peer's; download every filter of
//     the range (getcfilters), check each against its header, match the
//     wallet's scripts locally; fetch only the matching blocks and check
//     their merkle root against the header and their output scripts
//     against the filter. The peer learns nothing about the wallet but
//     which blocks it downloads.
//   - BIP-37 (Bloom filters): build a filter of the wallet's script data
//     pushes and known outpoints, with random noise elements (default 5 %,
//     at least 5 % more bits set) and a new tweak and noise every rotation
//     interval (default 100 blocks; filterload anew each time); getdata
//     MSG_FILTERED_BLOCK for every block of the range; check each
//     merkleblock's partial merkle tree against the synced header and that
//     the transactions that follow are exactly the proven ones. The peer
//     sees the filter: the wallet's elements hidden among noise and false
//     positives at the filter's rate.
//
// Usage:
//
//	cfscan --chain=regtest --peer=127.0.0.1:18484 --address=bcrt1q... [--address=...]
//	       [--script=<hex>] [--start=0] [--end=<tip>] [--method=auto|both|bip158|bip37]
//	       [--peer=<second BIP-157 peer>] [--bloompeer=<BIP-37 peer>]
//	       [--fpr=0.0001] [--noise=0.05] [--minelements=50] [--rotate=100]
//	       [--bloomflags=all|none|p2pubkeyonly] [--witnessfiltered]
//	       [--seed=<64 hex digits>] [--timeout=1m] [--transport=auto|v2|v1] [--json]
//
// The default, --method=auto, runs both methods when the BIP-37 peer
// serves Bloom filters (NODE_BLOOM) and BIP-158 alone, with a note on
// stderr, when it does not: cfindexd serves Bloom filters only with
// peerbloomfilters = 1, off by default. --method=both insists on both.
//
// Every peer is reached over BIP-324's encrypted v2 transport when it
// speaks it (--transport=auto, the default): cfscan opens with a v2 key,
// and a peer that hangs up on it (a v1-only node) is connected to again
// over plaintext v1, as Core falls back. The report names each peer's
// transport. --transport=v2 refuses a v1-only peer; --transport=v1 never
// tries v2. v2 hides the requests from observers on the path, not from
// the peer.
//
// Spends are found for outputs the same scan found first: a BIP-158 block
// that matched only because it spends a watched script from before --start
// is counted as a false positive, and a BIP-37 filter only holds the
// outpoints found so far (a wallet would insert its known outpoints).
//
// It prints, per method, the matches (txid, height, output or input index,
// amount, address; receives and spends of the watched scripts), the bytes
// downloaded, the blocks fetched and how many were false positives, and
// for BIP-37 how many of the inserted elements were noise. With both
// methods it says whether they agree. Exit status: 0 when the scan
// succeeded (and, with both methods, they agree), 1 on an error, 2 on bad
// flags, 3 when the methods disagree.
//
// "cfscan sp" scans for BIP-352 silent payments from tweak servers
// (cfindexd with silentpayments = true): with a scan private key (never
// sent, logged or printed) and a spend public key, it fetches every
// server's tweak data, taproot filters and commitment headers by
// 2,000-height range, recomputes each server's headers from its data,
// stops naming the servers and heights when they disagree, matches each
// tweak's k = 0 candidate keys against the taproot filter, fetches only
// matching blocks (--peer over P2P, or --rest from Core's REST) and scans
// them with BIP-352's full k loop (docs/cfscan.md):
//
//	cfscan sp --scan-key=<hex|@file> --spend-pub=<hex> [--label=m]...
//	       --server=<URL> [--server=<URL>]... (--peer=<host:port> | --rest=<URL>)
//	       [--chain=main] [--from=H] [--to=H] [--json]
//
// Everything a peer sends is checked before it is trusted or allocated for
// (internal/p2pclient, bloom.DecodeMerkleBlock); every request has a
// deadline (--timeout). Header validation is the chain of prev hashes and
// each header's proof of work against its own bits (at most the network's
// limit); difficulty transitions are not checked, so a scan trusts that
// the peer's chain is the best one it can get — use two peers to cross
// check.
package main
