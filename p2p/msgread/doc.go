// Package msgread reads one peer's Bitcoin P2P messages off the wire for
// the server, so that a message costs no more than the peer paid for.
//
// Reader.Next reads a frame: the header is checked first (magic, a
// well-formed command, the command's payload cap), before anything is read
// or allocated for the payload. What the connection's State does not call
// for (anything but handshake commands before verack, transactions and
// inventory without relay, BIP-37 messages without serving, commands the
// server does not read) is discarded as it arrives, unbuffered. Payloads
// up to MaxSmallFrame are read under the caller's deadline; a larger one
// is read under a deadline that grows with the bytes received (MinRate,
// after LargeFrameGrace), and if it is to be decoded it first takes its
// bytes from the server-wide receive budget (Recv), or is discarded when
// that is spent. Buffers grow with what has arrived, never with what a
// header claims.
//
// DecodePayload checks every count wire would allocate for (inventory
// entries, locator hashes, the version's user agent) against the bytes
// that remain before wire decodes; transactions are never decoded into
// wire.MsgTx but checked in place and kept raw (RawTx), with their ids.
// Errors that mean the peer broke the protocol wrap ErrMisbehaving; a
// BIP-37 message while serving is off is a *NotServedError.
//
// The package holds no state beyond a Reader's buffer and knows nothing of
// peers, handlers or the server's other limits.
package msgread
