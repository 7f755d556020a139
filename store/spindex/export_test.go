package spindex

import "github.com/btcsuite/btcd/chainhash/v2"

// Test access to the value encodings, for tests that damage a file.
var (
	BucketTweaks  = bucketTweaks
	BucketFilters = bucketFilters
	BucketHeaders = bucketHeaders
	HeightKey     = heightKey
)

// HeaderValueWithBlock is a valid sp_headers value at h naming block.
func HeaderValueWithBlock(h uint32, block chainhash.Hash) []byte {
	return headerValue(&HeaderRecord{Height: h, BlockHash: block})
}
