package btcdtest

import (
	"errors"
	"fmt"
)

var (
	// ErrNodeExited is returned when btcd exited before it answered RPC.
	ErrNodeExited = errors.New("btcd exited")
	// ErrNodeStopped is returned by RPC helpers after Stop.
	ErrNodeStopped = errors.New("btcd stopped")
	// ErrNodeRunning is returned by Launch and RunOnce when the node's
	// process is still running.
	ErrNodeRunning = errors.New("btcd is running")
	// ErrAuth is returned when btcd rejects the RPC credentials (HTTP 401).
	ErrAuth = errors.New("rpc authentication failed")
	// ErrBlockRejected is returned by SubmitBlock when btcd refuses a block.
	ErrBlockRejected = errors.New("block rejected")
	// ErrInsufficientFunds is returned when the wallet has no spendable
	// output of the kind or value asked for.
	ErrInsufficientFunds = errors.New("wallet has insufficient spendable funds")
)

// RPCError is an error object returned by btcd in a JSON-RPC reply.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message)
}
