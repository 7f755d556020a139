// Package knownhashes remembers which block hashes a peer already knows
// (announced to it, sent in headers, named in its locator), so that a tip
// is announced to it once: a rolling pair of Bloom filters keyed with
// SipHash, whose false-positive rate stays bounded however long the peer
// stays connected. It keeps no package-level state and knows no peer.
package knownhashes
