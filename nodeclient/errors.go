package nodeclient

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors for what callers act on. Every error returned by this
// package that falls in one of these classes wraps the sentinel, so callers
// test with errors.Is. Most are transient: the follower retries them with a
// Backoff.
var (
	// ErrUnreachable means the node could not be reached over HTTP
	// (connection refused, timeout, TLS/proxy failure, work queue full).
	ErrUnreachable = errors.New("node unreachable")

	// ErrAuth means the node refused our credentials (HTTP 401/403) or
	// the cookie file could not be read.
	ErrAuth = errors.New("authentication failed (check rpcuser/rpcpassword or rpccookiefile, and rpcallowip)")

	// ErrWarmup means the node is starting up (RPC error -28, REST 503).
	ErrWarmup = errors.New("node is warming up")

	// ErrBlockNotFound means the node does not know the block (RPC error -5
	// on a block method, REST 404 "not found").
	ErrBlockNotFound = errors.New("block not found")

	// ErrTxNotFound means getrawtransaction found no such transaction
	// (RPC error -5 on getrawtransaction).
	ErrTxNotFound = errors.New("transaction not found")

	// ErrPruned means the node has pruned the block or its undo data.
	ErrPruned = errors.New("block data pruned")

	// ErrWrongNetwork means the node's genesis block is not the expected one.
	ErrWrongNetwork = errors.New("node is on another network")

	// ErrNoPrevoutSource means the node offers no way to learn the scripts
	// of spent outputs: no REST spenttxouts, no getblock verbosity 3 and no
	// transaction index.
	ErrNoPrevoutSource = errors.New("node cannot serve spent output scripts")

	// ErrMethodNotFound means the node does not implement the RPC method
	// (error -32601); used to tell btcd from Bitcoin Core.
	ErrMethodNotFound = errors.New("RPC method not found")

	// ErrMalformed means the node answered with bytes this package could
	// not decode or that do not match what was asked for (a block whose
	// hash differs, a spent-output list of the wrong shape).
	ErrMalformed = errors.New("malformed node response")

	// ErrTLS means cfindexd and the node disagree about TLS: plain HTTP
	// spoken to a TLS server (btcd's default), HTTPS to a plain one, or a
	// certificate rpccert does not verify. It is also ErrPermanent.
	ErrTLS = errors.New("TLS mismatch with the node")

	// ErrNoCookie means the cookie file could not be opened: the node has
	// not written it yet (it is starting), or it is elsewhere. No request
	// was sent. It is also ErrAuth.
	ErrNoCookie = errors.New("no cookie file")

	// ErrPermanent marks an error that no retry can fix until someone
	// changes the node's or cfindexd's configuration: credentials the node
	// rejects that were configured explicitly (not a cookie, which the
	// node rewrites on restart), a TLS mismatch, an address the node does
	// not allow. IsPermanent also counts ErrWrongNetwork and
	// ErrNoPrevoutSource.
	ErrPermanent = errors.New("the node refuses this configuration")
)

// IsPermanent reports whether err cannot heal by retrying: ErrPermanent,
// ErrWrongNetwork or ErrNoPrevoutSource. Callers stop at start on such an
// error and, once running, retry it slowly and loudly.
func IsPermanent(err error) bool {
	return errors.Is(err, ErrPermanent) || errors.Is(err, ErrWrongNetwork) || errors.Is(err, ErrNoPrevoutSource)
}

// permanentError marks err as ErrPermanent without adding to its message.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Is implements errors.Is for ErrPermanent.
func (e permanentError) Is(target error) bool { return target == ErrPermanent }

// Permanent marks err as ErrPermanent (one no retry can fix), keeping its
// message and everything it wraps. Nil stays nil.
func Permanent(err error) error { return permanent(err) }

// permanent marks err as one no retry can fix.
func permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// Bitcoin Core / btcd JSON-RPC error codes this package interprets.
const (
	codeMisc           = -1     // RPC_MISC_ERROR ("Block not available (pruned data)")
	codeInvalidAddrKey = -5     // RPC_INVALID_ADDRESS_OR_KEY (unknown block / tx)
	codeInWarmup       = -28    // RPC_IN_WARMUP
	codeMethodNotFound = -32601 // RPC_METHOD_NOT_FOUND
)

// RPCError is an error object returned by the node in a JSON-RPC reply.
// It matches the sentinels above with errors.Is according to its code,
// message and the method that produced it.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Method is the RPC method of the request; filled in by the client.
	Method string `json:"-"`
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("%s: RPC error %d: %s", e.Method, e.Code, e.Message)
}

// Is maps the error onto the package sentinels.
func (e *RPCError) Is(target error) bool {
	switch target {
	case ErrWarmup:
		return e.Code == codeInWarmup
	case ErrMethodNotFound:
		return e.Code == codeMethodNotFound
	case ErrPruned:
		return strings.Contains(e.Message, "pruned")
	case ErrBlockNotFound:
		return e.Code == codeInvalidAddrKey && isBlockMethod(e.Method)
	case ErrTxNotFound:
		return e.Code == codeInvalidAddrKey && e.Method == "getrawtransaction"
	}
	return false
}

func isBlockMethod(method string) bool {
	switch method {
	case "getblock", "getblockheader", "getblockfilter", "getblockstats":
		return true
	}
	return false
}

// markedError makes err also match mark with errors.Is, without adding to
// its message.
type markedError struct{ err, mark error }

func (e markedError) Error() string        { return e.err.Error() }
func (e markedError) Unwrap() error        { return e.err }
func (e markedError) Is(target error) bool { return target == e.mark }
