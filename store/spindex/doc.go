/*
Package spindex keeps the silent-payment index (BIP-352, issue 19) inside
the store's bbolt file: per block of the active chain its tweak data, its
taproot filter and its commitment header (docs/silent-payments.md), and
the index's frontier. It owns those buckets and nothing else; package
store opens the transactions and calls it from the same ones that write
and roll back the filters, so the index is exactly as crash- and
reorg-safe as they are. It does not compute tweaks (package silentpay
does), talk to the node, log, or keep package-level state.

# Model

The index covers the contiguous heights Start..Next-1 of the active chain
(State). Start is fixed by Enable (the network's first silent-payment
height); Next only grows by appending the block at Next, and shrinks when
a reorg or rollback disconnects blocks below it. A block is appended
either with the filters (store.BlockRecord.SilentPay, through
store.CommitBatch and store.Reorg) or later by a backfill (Commit), never
out of order: a record whose height is not Next is left for the backfill,
so the index never has a hole. Each appended block's commitment header
must continue the chain, dSHA256(commitment_hash || header at Next-1),
the zero hash before Start, or the write fails with ErrHeaderMismatch and
nothing is written.

Disconnected blocks are deleted from the index, not kept beside the
filters' stale set: silent-payment data are served by height ranges of
the active chain, and a block that comes back is rebuilt from the node
with its filter. The frontier and the entries move in the same
transaction as the tip.

Disabling the index in the configuration leaves its buckets: the store
still trims them on every rollback, and turning it on again resumes from
Next. An older build that does not know the index may move the tip
without trimming it; Check, run by store.Open, drops every entry above
the highest one whose block hash is still the active chain's.

# Schema

All buckets are top-level and exist once Enable ran. Heights are uint32
big-endian keys; a crc is a CRC32C (Castagnoli) of the rest of the value
seeded with the height, so a value moved under another key fails too.

	sp_meta      "state"   -> start[4] next[4] header[32] crc[4]
	                          header: the commitment header at next-1
	                          (zero when next = start); crc seeded 0
	sp_tweaks    height[4] -> crc[4] tweakdata       start..next-1
	sp_filters   height[4] -> crc[4] taprootfilter   start..next-1
	sp_headers   height[4] -> blockhash[32] header[32] tweakhash[32]
	                          filterhash[32] crc[4]  start..next-1

Every read checks the CRCs of the values it returns: a value failing its
CRC is never returned (*MismatchError, errors.Is ErrChecksumMismatch).
Range reads return at most MaxRange entries. Scrub checks every value of a
range; Rewind drops the index from a damaged height up so that the
backfill (indexer.SPBackfill) rebuilds it from the node; Check drops a
damaged commitment header at the top when the store opens.
*/
package spindex
