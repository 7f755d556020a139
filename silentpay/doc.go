// Package silentpay owns BIP-352 (silent payments) for cfindexd: the tweak
// of a transaction, a block's tweaks and taproot filter, the commitment
// chain over them, and the wallet's side (scanning, and creating outputs
// for tests and senders). It is the core of issue 19: the indexer calls
// BlockBuilder per block with the same spent scripts it uses for BIP-158,
// the store keeps what it returns, the servers serve it, cfscan scans with
// Scanner. docs/silent-payments.md specifies the serializations and the
// chain byte for byte.
//
// It does no I/O, keeps no package-level state, does not log, and knows no
// heights or networks (where a chain starts is the caller's).
//
// # The tweak
//
// ComputeTweak follows BIP-352's receiver (the version with K_max, whose
// vectors live in testdata/bip352): a transaction is scanned when it has a
// taproot output, spends no witness program of version 2 or more, and has
// an input of BIP-352's list (P2TR, P2WPKH, P2SH-P2WPKH, P2PKH, compressed
// keys only, no script path with NUMS point H as internal key); A is the
// sum of those inputs' keys, input_hash = hash_BIP0352/Inputs(outpoint_L
// || A) over the smallest outpoint of all inputs, and the tweak is
// input_hash·A, 33 bytes compressed. The index side (ComputeTweak, so
// BlockBuilder) works on public block data and does its curve arithmetic
// with Consensys gnark-crypto's secp256k1 (gcurve.go, glv.go), about twice
// as fast as btcec here; the wallet side (Scanner, Candidates,
// OutputKeys), which multiplies by secret keys, uses btcec/v2. Tests hold
// the two to the same bytes.
//
// BlockBuilder computes the same tweaks as ComputeTweak but not one by
// one: it sums each transaction's input keys as it reads it and finishes
// the tweaks of 64 transactions at a time (and the rest at the end of the
// block) with Montgomery's trick, one field inversion bringing all their
// sums A to affine form, one their tables of odd multiples for the
// scalar multiplications, and one all the products input_hash·A, where a
// transaction alone needs two (batch.go). Sums at the point at infinity
// and input hashes that are not valid scalars are skipped as ComputeTweak
// skips them, and the tweaks come out in block order.
//
// For P2PKH, BIP-352 asks for the key anywhere in a possibly malleated
// signature script and its reference slides a 33-byte window over every
// byte. This package looks only at the script's 33-byte pushes, last
// first. In a spend valid under consensus the key OP_CHECKSIG verified was
// pushed literally, since no enabled opcode builds 33 bytes, so both find
// the same key; the push walk costs a hash per push rather than per byte,
// which bounds what a block full of large malleated scripts costs. The
// differential tests and FuzzInputKey hold this against the byte window.
//
// # The taproot filter
//
// Per block, a BIP-158 GCS (P = 19, M = 784931, SipHash key from the block
// hash, built by package gcs) over the 32-byte x-only keys of the taproot
// outputs of the transactions that have a tweak. The light-client
// specification and BlindBit's new-utxos filter take x-only keys, as here,
// so a wallet matches its candidate keys P_k directly; block-dn's p2tr
// filter hashes whole scripts and spent scripts too, which a wallet
// looking for new payments does not need. Only transactions with a tweak
// can hold a silent payment, so leaving the others' outputs out (the
// coinbase's included) changes no wallet's result and keeps the filter
// smaller and its false positives fewer.
//
// # Commitment
//
// A block's tweak data (AppendTweakData: by transaction position, each
// tweak with its largest taproot output value) and its taproot filter are
// hashed apart, TweakHash and FilterHash; the block's commitment hash is
// the double SHA-256 of both, and its header chains that onto the previous
// header as BIP-157 chains filter hashes. A client holding one part and
// the other's hash can check that part alone.
//
// # Wallet
//
// Scanner runs BIP-352's k loop (at most KMax outputs per transaction),
// checking each P_k against the outputs left, then output − P_k and
// −output − P_k against its labels, the change label m = 0 always among
// them. Candidates gives a light wallet the keys to test a block's
// taproot filter for before it downloads the block: P_0, bare and per
// label, since every payment to the wallet includes a k = 0 output.
// OutputKeys is the sender's side, used to make test payments.
package silentpay
