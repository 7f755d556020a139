// Package attack is cmd/cfbench's hostile side: the attack classes run
// against one cfindexd process (Classes: huge declared counts, peers that
// pipeline and never read, slot filling, idle HTTP keep-alive connections,
// slow bulk readers, random block requests, huge invs with relay on,
// almost-whole huge transactions, invalid requests from one address,
// getheaders from genesis) and the well-behaved client beside them
// (GoodClient: P2P filters and filter headers, a REST filter and a bulk
// file, every byte checked against btcd's filters, its latency and
// refusals counted).
//
// Attackers dial from 127.x.y.z source addresses (a /16 block per class)
// on p2pclient.Conns, write frames and raw bytes, never read a payload
// (Conn.Skip), and reconnect when the daemon drops them: this process
// shares the machine with the daemon it measures. The payloads with huge
// counts are internal/attackwire's, shared with the p2p package's tests.
//
// It talks only to the loopback addresses in its Env.
package attack
