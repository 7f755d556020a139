// Package attack is cmd/cfbench's hostile side: the attack classes run
// against one cfindexd process (Classes) and the well-behaved client run
// beside them (GoodClient: P2P filters and filter headers, a REST filter
// and a bulk file, every byte checked against btcd's filters, its
// latency, refusals and evictions counted).
//
// The classes, one concept per file: floods and non-readers
// (classes_flood.go: huge declared counts, peers that pipeline and never
// read, slot filling, random block requests, huge invs with relay on,
// almost-whole huge transactions, invalid requests from one address,
// getheaders from genesis), HTTP (classes_http.go: idle keep-alive
// connections, slow bulk readers, pipelining non-readers), fair shares
// (classes_fairshare.go: peers that ask the most and read it all),
// BIP-37 (classes_bip37.go: maximal filters, non-reading wallets, an
// upload-target flood) and lockouts (classes_lockout.go: one /16 holding
// slots, 200 honest clients of one /16, a discouraged NAT address,
// eviction churn) and BIP-324 v2 (classes_v2.go on rawv2.go: handshake
// floods from many netgroups, garbage without its terminator, declared
// 16 MiB packets, decoy streams; v2conn.Initiate runs the handshakes).
// Each Class declares what its goals are: whether it is about fair shares
// (a tighter p99), where its good clients dial from (Spots: a fresh /16,
// another over v2, the attacker's /16, the attacker's address),
// whether a served client may be evicted, a count its tally must reach.
//
// Attackers dial from 127.x.y.z source addresses (a /16 block per class,
// or a /16 per peer where the class is about many hosts) on
// p2pclient.Conns, write frames and raw bytes, never read a payload
// (Conn.Skip), and reconnect when the daemon drops them: this process
// shares the machine with the daemon it measures. The payloads with huge
// counts are internal/attackwire's, shared with the p2p package's tests.
//
// It talks only to the loopback addresses in its Env.
package attack
