// Package nodeclient is the JSON-RPC and REST client of the node cfindexd
// follows, Bitcoin Core or btcd.
//
// # Model
//
// One Client holds one keep-alive http.Client shared by RPC and REST
// (HTTPS with Config.RPCCert, trusting only that certificate, re-read when
// it changes: btcd's rpc.cert). It authenticates with rpcuser/rpcpassword
// or a cookie file, re-read once when the node answers 401 (a node
// restart). Requests are JSON-RPC 1.0, which both nodes accept; batches
// (CallBatch, GetBlockHashes, GetRawTransactions, GetRawBlocks) save round
// trips, which matters with btcd, which closes the connection after every
// request. A node that answers "work queue full" is retried briefly.
//
// Replies that carry a block or transaction as one hex string are read in
// place when they have the envelope Core and btcd send (hexreply.go, on
// internal/jsonscan); every other shape goes through encoding/json. Raw
// blocks and transactions are read in place by internal/wirescan and
// checked against the hash asked for. CallStream hands a reply body to a
// caller's streaming decoder (the getblock-3 source in prevouts).
//
// The REST helpers (RESTGet, DecodeSpentTxOuts) serve Core's binary
// /rest/block and /rest/spenttxouts. GetNodeInfo tells Core from btcd
// (getnetworkinfo, or btcd's "version" extension) and HasTxIndex probes
// the transaction index. GetRawMempool and GetMempoolTransactions serve
// the mempool mirror through an adapter in cmd/cfindexd.
//
// # Errors
//
// Every error in one of the classes callers act on wraps a sentinel of
// errors.go: ErrUnreachable, ErrAuth, ErrWarmup, ErrBlockNotFound,
// ErrTxNotFound, ErrPruned, ErrWrongNetwork, ErrNoPrevoutSource,
// ErrMethodNotFound, ErrMalformed, ErrTLS, ErrNoCookie. JSON-RPC error
// objects come back as *RPCError, which matches the sentinels by code,
// message and method. IsPermanent names the errors no retry heals
// (credentials configured explicitly and refused, a TLS mismatch, another
// network, no prevout source).
//
// # What it must not do
//
// Keep state about the chain, retry on its own beyond the cookie re-read
// and the short busy retry (callers retry with internal/backoff), log at
// error level for anything the node does, or import the packages that use
// it (prevouts, indexer, cmd).
package nodeclient
