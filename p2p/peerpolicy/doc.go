// Package peerpolicy is the P2P server's inbound peer policy, as small
// types with no connection state of their own:
//
//   - address groups (AddrGroup, SubnetGroup, NetGroup): the keys of the
//     per-address and per-subnet caps and of eviction's netgroups;
//   - Whitelist (ParseWhitelist): networks exempt from caps, eviction,
//     discouragement and the upload target;
//   - Discouragement: a bounded, expiring list of misbehaving address
//     groups, admitted only while slots are free and evicted first
//     (Bitcoin Core's BanMan discouragement);
//   - SelectPeerToEvict: which inbound peer makes room for a newcomer, a
//     pure function over candidates (Core's SelectNodeToEvict);
//   - TokenBucket and SharedBucket: event rates (transaction relay);
//   - UploadTarget: block bytes served over a sliding day against
//     -maxuploadtarget;
//   - WorkMeter: the CPU share BIP-37 work may take across all peers.
//
// The server (package p2p) decides when each applies; this package only
// answers. Everything here that is shared between peers is safe for
// concurrent use; TokenBucket belongs to one peer's reader.
package peerpolicy
