// Package jsonscan is the module's one streaming JSON scanner, for the
// node's replies that are too large or too hot for encoding/json: the
// getblock-3 decoder in prevouts (megabytes of JSON read as they stream
// in) and the hex-reply recogniser in nodeclient (a block's hex found in
// place in a reply already in memory).
//
// # Model
//
// A Scanner reads one document from a buffer, refilled from an io.Reader
// when there is one (Reset(src, buf)), or from the bytes of the buffer
// alone (Reset(nil, doc)). Each reading method starts at the next value,
// whitespace allowed before it, and either consumes it or returns an
// error; there is no token type and no tree. Callers walk the document
// with Items/Elements and callbacks, read the members they need with the
// typed methods (HexString straight into their own buffer, Name into a
// fixed key buffer, RawString and PlainString in place for a buffered
// document) and SkipValue everything else, scanning only for the ends of
// strings and brackets with bytes.IndexByte.
//
// What a caller reads is checked to the letter (types, escapes, literal
// spelling, integer form); what it skips is not validated, so a caller
// that must agree with encoding/json on every input either reads every
// member it accepts (nodeclient) or checks what it builds (prevouts).
// Nesting is bounded by MaxDepth, strings by the caller's limits.
//
// # What it must not do
//
// Allocate per value, copy the document, know anything about Bitcoin or
// the node, or keep state between documents.
package jsonscan
