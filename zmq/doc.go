// Package zmq subscribes to Bitcoin Core's ZMQ notifications.
//
// Subscriber turns the hashblock, rawblock and sequence topics into Hints
// that the node's tip may have moved. A hint is only a hint: the follower
// asks the node for its tip and never trusts Hint.Hash. A gap in a topic's
// sequence number, a reconnect, a block disconnect (invalidateblock
// publishes only a sequence "D") or a hint dropped because the consumer
// was slow makes the next Hint a Resync.
//
// Dial, ReversedHash and the Topic constants serve the mempool mirror,
// which reads the sequence and rawtx topics itself.
//
// Core's messages have three frames: topic, body, and a 4-byte
// little-endian sequence number counted per topic since the node started.
// Hashes are in display (reversed) byte order. gozmq (pure Go) is the
// transport; it reconnects by itself after EOF and reports that as a
// timeout, turned into a Resync here. Its Subscribe cannot be cancelled,
// so Run dials in a goroutine.
//
// The package knows nothing of the node client, the store or the
// indexer; btcd has no ZMQ.
package zmq
