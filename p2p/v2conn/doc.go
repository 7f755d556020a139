// Package v2conn is BIP-324's encrypted v2 transport, both sides: the
// responder for the light-client listener and the initiator for the
// module's outbound client (internal/p2pclient), bounded so that nothing a
// peer sends costs more than it paid for in bytes.
//
// It owns five things:
//
//   - Telling v1 from v2 on one port (Detect), as Core does: a v1 initiator
//     opens with the network magic and a "version" command; any other first
//     bytes start a v2 initiator's key. The bytes read are handed back, to
//     be replayed into the v1 reader or given to Accept.
//   - The responder's handshake (Accept): ElligatorSwift keys and ECDH
//     (btcec's ellswift), HKDF key derivation, the garbage (at most 4,095
//     bytes, its terminator searched in linear time), decoys and the
//     version packet, under a deadline, with the CPU-bound steps behind a
//     caller's admission gate.
//   - The initiator's handshake (Initiate): the same steps and bounds from
//     the other side; a responder that hangs up before its key is
//     ErrV1Only, the cue for Core's v1 fallback (connecting again over v1).
//   - The packet layer (Conn): every declared length is checked against the
//     cap (Config.MaxPayload plus the message type; Core's
//     MAX_PROTOCOL_MESSAGE_LENGTH by default) and the peer's receive budget
//     before anything is read or allocated for the packet, and buffers grow
//     with the bytes that arrive; decoys are skipped, counted and bounded.
//   - BIP-324's short message IDs (AppendType, DecodeType): one byte for
//     the 28 commands of its table (the cfilter family, headers, inv,
//     getdata, tx, merkleblock, the BIP-37 messages among them), a zero byte
//     and the 12-byte command for the others (version, verack,
//     sendheaders, …).
//
// A Conn reads messages as command and payload, the same two things the
// v1 reader takes off a frame header and its payload, so the server's
// per-command caps and decoders (p2p/msgread) apply unchanged after it.
//
// The ciphers are BIP-324's FSChaCha20 (lengths) and FSChaCha20Poly1305
// (contents), rekeyed every 224 packets, written here on
// golang.org/x/crypto's ChaCha20 and ChaCha20-Poly1305 so that a packet
// is encrypted and decrypted in its own buffer (cipher.go); btcd's
// v2transport has the same ciphers but returns fresh buffers on every
// call, and the tests hold the two to the same bytes. btcd's Peer type is
// not used: its packet read allocates from the declared length before
// checking it, and its handshake reads decoys without a bound (see
// packet.go).
//
// The package holds no state beyond a connection's and knows nothing of
// peers, handlers, policies or the server's other limits. It dials
// nothing: the caller hands Initiate a connection.
package v2conn
