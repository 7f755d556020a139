// Package storecheck keeps the stored bytes honest while the daemon runs
// and when it is stopped: CheckRange reads heights through the store's
// checked reads and also checks what a CRC cannot (a filter hash against
// its filter, the filter-header chain, block headers against their hashes
// and links, the height index); CheckStale does the same for the blocks
// of the stale set; Scrub walks the store with both in the background at
// a low rate; a Repairer hears of every damaged value
// (store.Options.OnMismatch and Scrub), logs each once at ERROR, counts it
// through an Observer, and rewrites the height once a rebuild function
// (the follower's RebuildBlock) gives a header and filter that fit the
// stored chains. Stale blocks are reported, not repaired.
//
// It must not serve anything or talk to the node itself: the rebuild
// function is the only way to the node, and readers learn of damage from
// the store, which answers a damaged height as not found until repaired.
package storecheck
