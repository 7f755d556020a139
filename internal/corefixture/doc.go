// Package corefixture replays the recorded Bitcoin Core v31 regtest
// responses in testdata/bitcoind-v31-regtest for tests: an httptest server
// that answers JSON-RPC (method + params → recorded result file) and REST
// (path → recorded body and status) with Core's envelopes, HTTP statuses
// and cookie auth, and a minimal ZMTP 3.0 PUB socket that replays the
// captured ZMQ notifications.
//
// The server presents the recorded final state (tip h115) by default;
// Server.SetActiveTip switches getbestblockhash, getblockhash,
// getblockchaininfo and getblockheader to the chain ending at another
// block, e.g. the stale h114 to replay the state before the reorg.
//
// What is derived rather than recorded (and how it is checked):
//   - Blocks h1–h94 (the recording has only their hashes and filters):
//     each is the h95 coinbase used as a template (BIP34 height push,
//     nLockTime = height−1, same outputs and witness commitment) under a
//     header whose time and nonce are searched for; a block is kept only
//     if its header hashes to the recorded hash at its height, so the
//     whole active chain h0–h115 is served and every block of it verified.
//     Genesis comes from chaincfg and is checked the same way. Their
//     getblockheader and getblock 3 replies are reduced (no chainwork,
//     mediantime, difficulty, asm, descriptors, addresses); see
//     Fixtures.Early.
//   - getrawtransaction: the fixtures were recorded with -txindex=1 but
//     without getrawtransaction replies. The server answers from the
//     transactions of the recorded and derived raw blocks; every one hashes
//     to its txid by construction. The genesis coinbase is refused, as Core
//     does.
//   - /rest/block/<h>.bin for blocks not recorded over REST (h0–h100) is
//     the raw block, which the manifest verified equal to REST for every
//     recorded block; /rest/spenttxouts/<h>.bin for those coinbase-only
//     blocks is 0x01 0x00 (recorded for genesis).
//
// Must not: touch the network beyond loopback, sleep, or keep package-level
// mutable state. It is test support only (internal/).
package corefixture
