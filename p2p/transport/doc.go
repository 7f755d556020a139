// Package transport is a light client's connection as the P2P server's
// peer sees it: messages in, the server's pre-built v1 frames out, over
// either transport a client may speak on the one listening port.
//
// Establish tells v1 from v2 by the first bytes (v2conn.Detect) under the
// handshake deadline. A v1 connection is read by msgread.Reader with the
// bytes Detect took replayed in front, and written as it always was: the
// frames copied into a buffered writer. A v2 connection runs BIP-324's
// responder handshake (v2conn.Accept, its curve steps behind the caller's
// admission gate) and then:
//
//   - reads each message as command and payload and hands it to
//     msgread.FromPayload, so the per-command caps, the handshake, relay
//     and BIP-37 rules and the decoders are those of v1. A packet over
//     MaxSmallFrame takes its bytes from the server-wide receive budget
//     before it is read, and is read under the same minimum rate as a
//     large v1 frame; a packet the budget cannot cover ends the connection
//     (v2conn.ErrOverBudget: a v2 packet cannot be skipped unread), where
//     v1 would discard the frame and keep the peer.
//   - writes each queued entry (one frame, or many frames of one command
//     back to back, the payload possibly apart) as one v2 packet per
//     frame: the 24-byte headers are dropped, the payloads sealed as they
//     are, never re-encoded. Packets go through a buffered writer flushed
//     when the peer's queue is empty, as v1 frames do. A message over
//     MaxSmallFrame is sealed into a plaintext and a ciphertext of the
//     peer's own (a block served to many v1 peers is shared; over v2 each
//     peer encrypts its copy), so it first takes twice its size from a
//     server-wide seal budget (Options.Seal), held until it is written.
//
// Errors of the v2 layer that mean the peer broke BIP-324 wrap
// msgread.ErrMisbehaving, as a malformed v1 frame does.
//
// The package knows nothing of peers, handlers or policies, and holds no
// state beyond a connection's.
package transport
