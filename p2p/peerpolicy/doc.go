// Package peerpolicy is the P2P server's inbound peer policy, as small
// types with no connection state of their own:
//
//   - address groups (AddrGroup, NetGroup): the keys eviction counts
//     peers under, and discouragement's;
//   - Whitelist (ParseWhitelist): networks exempt from eviction's levels,
//     eviction, discouragement and the upload target;
//   - Discouragement: a bounded, expiring list of misbehaving address
//     groups, admitted while slots are free or in place of a long idle
//     peer, and evicted first (Bitcoin Core's BanMan discouragement);
//   - SelectPeerToEvict: which inbound peer makes room for a newcomer, a
//     pure function over candidates (Core's SelectNodeToEvict), with the
//     per-address and per-netgroup levels above which peers go first and
//     a grace for newcomers not yet served (NewcomerGrace);
//   - TokenBucket and SharedBucket: event rates (transaction relay);
//   - HandshakeGate: the CPU of BIP-324 v2 handshakes, a few curve steps
//     at once server-wide and a rate per network group;
//   - UploadTarget: block bytes served over a sliding day against
//     -maxuploadtarget, in all and per network group (each may take
//     1/UploadGroupShare of it), and why a historical block is refused;
//   - FairQueue: slots of work granted to the peer with the least recent
//     service, counted in the cost reported (NewFairQueue: BIP-37 work)
//     or in turns, a request a turn per quantum of its work and at least
//     one (NewTurnQueue: the server's filter work);
//   - FairPool: a budget of bytes (the shared part of the send budget)
//     granted to waiting peers least recent service first, waking only
//     those the bytes given back cover; both keep service the same way
//     (service.go), on a CoarseClock read with one atomic load;
//   - SendPool and SendBudget: the bytes queued for peers and not yet
//     written, each peer's reserve and its share of the FairPool, and
//     when a peer that does not read has stalled;
//   - WorkMeter: the CPU share BIP-37 work may take across all peers.
//
// The server (package p2p) decides when each applies; this package only
// answers. Everything here that is shared between peers is safe for
// concurrent use; TokenBucket belongs to one peer's reader.
package peerpolicy
