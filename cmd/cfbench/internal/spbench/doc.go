// Package spbench is the silent-payment side of `cfbench sync
// -sp-compare`: it runs cfindexd with the index on after each of the
// sync benchmark's runs without it, then on the store of the last one to
// time the background build (Runner); it checks the BIP-352 tweak index a cfindexd run built
// (Check: every block from the index's start to the tip present, on btcd's
// chain, its commitment chain recomputed, and a sample of blocks' tweaks
// recomputed with silentpay.ComputeTweakMsg from btcd's blocks and spent
// scripts), and it summarizes catch-ups with and without the index measured
// in the same run (Comparison: the rate ratio, CPU per block, the tweak work
// as transactions per second per core, peak RSS against the budget, the
// background build's rate).
//
// It only reads stores a finished run left behind; it never changes how
// cfindexd works.
package spbench
