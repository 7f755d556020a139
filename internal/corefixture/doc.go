// Package corefixture replays the recorded Bitcoin Core v31 regtest
// responses in testdata/bitcoind-v31-regtest for tests: an httptest server
// that answers JSON-RPC (method + params → recorded result file) and REST
// (path → recorded body and status) with Core's envelopes, HTTP statuses
// and cookie auth, and a minimal ZMTP 3.0 PUB socket that replays the
// captured ZMQ notifications.
//
// What is derived rather than recorded (and how it is checked):
//   - getrawtransaction: the fixtures were recorded with -txindex=1 but
//     without getrawtransaction replies. The server answers from the
//     transactions of the recorded raw blocks (h95–h115 and the two stale
//     blocks) plus the coinbases of the coinbase-only blocks h1–h94 that
//     recorded blocks spend; those are rebuilt from the h95 coinbase as a
//     template (BIP34 height push, nLockTime = height−1) and kept only if
//     their txid equals the outpoint a recorded input spends.
//   - /rest/block/<h>.bin for h95–h100 (not recorded over REST) is the
//     recorded getblock <h> 0 bytes, which the manifest verified equal to
//     REST for every other block; /rest/spenttxouts/<h>.bin for those
//     coinbase-only blocks is 0x01 0x00.
//
// Must not: touch the network beyond loopback, sleep, or keep package-level
// mutable state. It is test support only (internal/).
package corefixture
