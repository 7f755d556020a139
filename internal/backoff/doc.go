// Package backoff yields capped exponential delays with injected jitter
// for retry loops: the follower's rounds, the node supervisor in
// cmd/cfindexd and the ZMQ readers.
//
// It owns no goroutine and no policy beyond the delay: callers decide what
// to retry and when to give up. A Backoff is not safe for concurrent use;
// give each retry loop its own.
package backoff
