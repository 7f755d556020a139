// Package nodep2p is the P2P link to the node cfindexd follows, used to
// fetch raw blocks faster than getblock (btcd serialises every block as hex
// inside JSON).
//
// # Model
//
// Pool fetches runs of blocks as an ordinary outbound peer of the node, on
// the module's one outbound P2P client (internal/p2pclient's Conn):
// version/verack announcing NODE_WITNESS and no tx relay, one getdata of
// witness-block vectors per run, blocks read back in request order, each
// scanned in place (internal/wirescan) and checked to hash to the block
// asked for at its position. Pings are answered, everything else is
// skipped unbuffered; every frame's length is checked against its
// command's cap before anything is allocated. A pool holds one connection per
// concurrent run (DefaultP2PConns), each used by one fetch at a time with
// no goroutines of its own; reads have deadlines and a cancelled context
// unblocks them.
//
// It is only a faster path: any failure drops the connection (a broken
// one is retried once on another), and otherwise the caller fetches the
// run over JSON-RPC (ErrUnavailable and every other error). A failed dial
// logs one warning (later ones at debug; at info when the address was
// guessed) and keeps runs off P2P for a few seconds.
//
// Each new connection checks that the peer is the node's P2P port: its
// first frame must carry our network's magic (a node of another network
// is named, from netparams' table), and it must serve the block
// IdentifyBlock names (block 1 of the RPC node's chain). Such an address
// is not redialled for a while; CheckNodeP2P lets the daemon refuse a
// configured nodep2p at start with ErrNotTheNode.
//
// # What it must not do
//
// Import the node client (the identifying block comes in as a function),
// frame P2P messages itself (p2pclient does), serve peers, or hold state
// beyond its connections.
package nodep2p
