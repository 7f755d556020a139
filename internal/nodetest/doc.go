// Package nodetest holds the test helpers that the tests of several
// node-facing packages (nodeclient, prevouts, blockfiles, zmq, mempool,
// internal/wirescan) share: a test context and logger, the ground-truth
// decodings of the recorded Core data (spent scripts, the mempool after the
// reorg's invalidateblock) and a plain reference merkle root.
//
// It is imported by tests only, and must not import any package whose tests
// use it (nodeclient's in-package tests do, so never nodeclient).
package nodetest
