// Package testvectors loads the real data the module's tests share: the
// official BIP-158 test vectors (testdata/bip158/testnet-19.json, testnet3
// blocks with their previous output scripts, basic filters and filter
// headers) and the mainnet blocks btcd ships in its module
// (blockchain/testdata/blk_0_to_14131.dat, a Bitcoin Core blk file of
// 2009–2010, and block 277,647 of 2014). Every loader checks what it reads
// (block hashes, record framing, chain links) and fails the test on
// anything unexpected, so a test using them never runs on half-read data.
//
// It must not be used outside tests and benchmarks.
package testvectors
