// Package attackwire holds the hostile P2P payloads that both the p2p
// package's attack and allocation tests and cfbench hostile send: messages
// declaring far more elements than they carry, and raw frames around any
// payload (with a valid checksum, so the receiver gets past the header).
// It is test and benchmark tooling; the daemon never imports it.
package attackwire
