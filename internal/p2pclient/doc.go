// Package p2pclient is the one outbound Bitcoin P2P client: every program
// and test of the module that dials a peer (cmd/cfscan, cmd/cfbench's load
// generators and attack tools, the node's P2P link, tests against btcd or
// cfindexd) does it here.
//
// Two layers:
//
//   - Conn is one framed connection: dial (optionally from a chosen local
//     address), the v1 version handshake with chosen services, relay flag,
//     nonce and user agent, optional messages before our verack, and an
//     optional strict mode that refuses anything else before the peer's
//     verack (Handshake), wire messages sent (Send), raw bytes written as
//     they are (WriteRaw, for attack tools and tests of malformed input),
//     getdata of a run of inventory, and four ways to read frames, each
//     answering pings (unless KeepPings): ReadFrame (checksummed, payloads
//     the caller keeps, a keep-list so that unwanted frames are skipped
//     unread), ReadMessage (any frame decoded by wire, its declared counts
//     checked first: for tests), ReadRaw (in place in the read buffer, no
//     checksum, no allocation: for load generators that compare whole
//     frames) and Skip (command and size only: for attackers that must not
//     spend CPU or memory on the answers).
//   - Peer is a light client on a Conn: deadlines from contexts, and
//     request helpers for what BIP-157 and BIP-37 wallets ask — headers,
//     compact filters, their headers and checkpoints, blocks, filterload
//     and filtered blocks (merkleblock plus the matched transactions,
//     decoded with bloom.DecodeMerkleBlock rather than wire's decoder,
//     which allocates from declared counts). Responses are matched to
//     requests by content and, where a peer may send a variable number of
//     messages, by a ping sent after the request: everything before the
//     pong belongs to the request.
//
// Either speaks v1 or BIP-324's v2 (ConnOptions.Transport, Options.Transport;
// p2p/v2conn's initiator): TransportAuto tries v2 and falls back to v1 when
// the peer hangs up before its key, as Core does for an address it
// believes speaks v2. Over v2 the four ways to read hand back frames made
// up from each message's command and payload (with a zero checksum where
// the caller never checks it), WriteRaw translates v1 frames into
// messages, and Transport says which the connection speaks.
//
// Neither is safe for concurrent use: one goroutine sends a request and
// reads its answer.
//
// Untrusted input: every frame header is checked for network magic
// (*WrongMagicError), a printable command and a declared length no larger
// than the reader's cap before the payload is read (MaxPayload: blocks and
// transactions up to wire.MaxBlockPayload, anything unknown up to Core's
// MAX_PROTOCOL_MESSAGE_LENGTH); list messages, transactions and blocks
// have their declared counts checked against the payload (bounds.go, with
// internal/wirescan's count reader) before wire decodes them.
package p2pclient
