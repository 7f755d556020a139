/*
Package store keeps cfindexd's compact block filters (BIP-157/158) in one
bbolt file: the active chain's block hashes, headers, filters and filter
headers by height, an index from block hash to height, and the blocks a
reorg disconnected, kept by hash because Bitcoin Core still serves filters
of stale blocks.

The package owns the file and its layout. It exposes domain verbs
(CommitBatch, Rollback, FiltersByHeight, FiltersForStop,
FilterHashesForStop, FilterHeaderCheckpoints, ...) and never bbolt types.
It must not build filters or compute filter headers for its callers (the
indexer does, with package headers); it only computes each filter's hash
and the checksum of the P2P cfilter message carrying it (wireframe.CFilterHasher),
and checks that the filter headers it is given chain (package headers'
pure functions). It must not talk to bitcoind or peers, log, or keep
package-level state.

# Model

The active chain grows only at its tip. The single writer, the indexer,
appends blocks with CommitBatch in batches; each batch is one bbolt
read-write transaction that writes the batch's headers, filters, filter
headers, filter hashes and cfilter checksums and moves the tip in the same
transaction. CommitBatch hashes the filters before that transaction and refuses a batch
whose filter headers do not continue the tip's (ErrFilterHeaderMismatch),
so the stored filter-header chain is always the BIP-157 chain of the stored
filters. bbolt commits a
transaction by writing its pages, fsyncing, then writing and fsyncing a new
meta page, so a crash at any instant leaves the file at the last committed
transaction: the tip is the end of some committed batch, and every block at
or below it is present. Nothing needs recovery on Open. Options.NoSync
skips the fsyncs; a killed process still leaves a consistent file, a power
loss may not, so it is for tests only.

A reorg is Rollback(toHeight), one transaction that moves every block above
toHeight from the active chain to the stale set and moves the tip down,
followed by CommitBatch of the new branch. Committing a block that is in the
stale set (a reorg back) takes it out of the stale set; that is the only
way a block leaves it, so the stale set only grows.

Readers use bbolt read transactions and see a consistent committed
snapshot; any number run alongside the writer. Range reads (Headers,
FiltersByHeight, FilterHeadersByHeight, FiltersForStop,
FilterHeadersForStop, FilterHashesForStop, BlockHashesForStop) each use one
read transaction and walk height-keyed buckets with cursors in key order,
never a lookup per height; they return at most MaxRange entries. EachFilter
streams the filters of blocks a BlockHashesForStop answer named, in as many
short read transactions as its caller wants (a server sending to a slow peer
must not hold one open), and returns the same filters whatever reorgs
happened in between, because a block's filter is fixed by its hash and
stale blocks keep theirs; each filter comes with its stored cfilter
checksum, so a P2P server frames it without hashing. FilterHeaderCheckpoints reads
every interval-th filter header up to a stop (a getcfcheckpt answer, about
900 at mainnet height) in one read transaction with one cursor seeking
forward, and returns at most MaxCheckpoints. Tip is served from memory, updated after each
commit; TipChanged wakes waiters after each commit or rollback.

Each read method takes its own snapshot, so two calls can see two states,
and Tip, published just after a commit, can lag the file for as long as the
commit's final fsync takes (or lead it for a moment during a rollback). An
answer built from several reads (the blocks above a hash up to the tip)
takes them from one Snapshot instead: Read(fn) runs fn in one read
transaction, and the Snapshot's own Tip is that state's tip. fn must not
wait on a network client: while it runs, a commit that grows the file
waits.

# Schema (version 2)

All buckets are top-level. Heights are uint32 big-endian, so byte order is
height order and appends go to the right edge of the B+tree. Hashes are 32
bytes in internal (wire) byte order, the reverse of their display form.
Headers are the 80-byte wire serialisation. Filters are the BIP-158 wire
form (CompactSize N, then the Golomb-coded set) and are never empty. A
checksum is the 4-byte P2P message checksum of the block's cfilter message
(wireframe.CFilterHasher: the first 4 bytes of dSHA256(0x00 || block hash ||
CompactSize(len(filter)) || filter)).

	meta
	    "schema_version" -> uint32 BE                  SchemaVersion; Open upgrades 1, refuses others (ErrSchemaVersion)
	    "genesis"        -> hash[32]                   network's genesis; Open refuses others (ErrWrongNetwork)
	    "tip"            -> height[4] hash[32] filterheader[32]
	                                                   absent on an empty store
	    "checksum_backfill" -> next[4] end[4]          heights next..end-1 may lack a checksum
	                                                   (written by schema 1); absent when none do
	headers        height[4] -> hash[32] header[80]    active chain, 0..tip
	heights        hash[32]  -> height[4]              active chain only
	filters        height[4] -> filter                 active chain, 0..tip
	filterheaders  height[4] -> filterheader[32] filterhash[32]
	                                                   active chain, 0..tip
	checksums      height[4] -> checksum[4]            active chain, 0..tip (but the backfill's range)
	stale          hash[32]  -> height[4] header[80] filterheader[32] filterhash[32] checksum[4] filter
	                                                   disconnected blocks, any number per height

Invariants after every commit: headers, filters and filterheaders hold
exactly the heights 0..tip, and checksums too except heights in the
checksum_backfill range; heights holds exactly the hashes in headers;
each header's PrevBlock is the hash at the height below; no hash is both in
heights and in stale; a stale block's parent is active or stale, at the
height below. Every filterhash is dSHA256(filter) of its block (the BIP-157
filter hash), every checksum the cfilter checksum of its block and filter,
and every filterheader is dSHA256(filterhash || the
filterheader of the parent), the zero hash standing for genesis's parent,
in the stale set as on the active chain: CommitBatch computes the first two and
checks the third before writing, and Rollback moves all three unchanged. A read
that finds no checksum at an active height outside the backfill's range
fails with ErrCorrupt.

The checksums cost 4 bytes a block plus bbolt's 16-byte leaf element and
the 4-byte key: 20.9 MiB at mainnet's 900,000 blocks beside some 5 GB of
filters (0.4 %). Keeping the whole wire-ready cfilter payload instead of
the filter (the filter type, block hash and CompactSize length before it,
35 bytes, or 59 with the frame header) would save only writing those
bytes per filter when serving, about 5 % of the serving CPU per filter in
p2p's profile (some 5 of 95 ns), at 32-53 MB more on disk and an upgrade
that rewrites all 5 GB of filters (a copy-on-write file grows by as much
while it runs); the checksum is the part that costs CPU to compute.

# Upgrades

A schema-1 file (before the checksums) is upgraded in place at Open, with
no re-index (upgrade.go). One write transaction creates the checksums
bucket, rewrites each stale value with its checksum, records 0..tip in
checksum_backfill and sets the version to 2, so a crash leaves the file
at schema 1 or wholly at schema 2. Then a background backfill, which Open
starts whenever checksum_backfill exists and Close stops, computes the
missing checksums from the bottom up in batches of at most 16 MiB of
filters or 50,000 heights: each batch is read (and hashed) in one short
read transaction and written, with checksum_backfill moved past it, in one
write transaction under the writer lock, so a crash loses at most the
batch in flight and the next Open resumes. Until it is done, reads compute
the checksum of a height in its range, which is what every read did before
schema 2. It skips heights that got a checksum meanwhile (blocks committed
since) or whose block changed since it read them (a reorg), and never
looks above the tip, since a block committed there gets its checksum from
CommitBatch. ChecksumBackfill reports its progress and an error that
stopped it (it starts again at the next Open). On a generated mainnet-shaped
store (903,944 blocks, 5.97 GB; BenchmarkUpgradeSchema1 with
CFINDEXD_BENCH_STORE_MB=5000) the upgrade transaction takes 5-32 ms and
the backfill 8 s with the file in the page cache and 120 s cold (a disk
reading about 40 MB/s: it reads every filter once); an upgrade done whole
at Open would hold the daemon's start that long, hence the background.
The checksums bucket holds 20.9 MiB there. An older build refuses an
upgraded file (ErrSchemaVersion): there is no downgrade but a rebuild.

Filters, filter headers and headers live in separate buckets so that a
getcfheaders answer (the filter header before the range and 2,000 filter
hashes) reads about 170 KB of dense filterheaders pages and not one filter,
as Bitcoin Core's filter index keeps the hash beside the header for the
same reason. A FiltersByHeight answer advances three cursors in step, each
a sequential scan.

# What callers may rely on

Every slice returned is a copy that stays valid after the call; the filters
of one range call share one backing array, each capped at its own length.
Errors wrap the sentinels in errors.go; compare with errors.Is. A failed
CommitBatch or Rollback writes nothing.

# Faults

A new store is built in a temporary file in the same directory
(<name>.creating-<random>), fsynced, hard-linked to its path (a link never
replaces a file another process created meanwhile), and the directory
fsynced: a crash or a full disk at any step leaves no file at the path or
a complete empty store, never a half-made one; Open removes temporary files
older than a minute. Before bbolt maps an existing file, Open locks it and
checks it with plain reads (filecheck.go): at least four pages, a valid
meta page (magic, version, checksum, page size), the page count of the
meta page bbolt will use within the file, its root and freelist pages
inside that, the freelist listing only pages in use, and the root page of
every bucket a leaf or branch page of its own id. That costs a few preads
whatever the file's size (0.6 ms with the file out of the page cache,
0.05 ms in it, on a 5.4 GB store); bbolt's full page walk (Tx.Check), 27 s
cold on the same file, is not done.

Damage below the top of the tree is found by the reads that meet it. bbolt
panics on a page of the wrong type or id or with element offsets outside
the page, and a page beyond the end of a truncated file (SIGBUS) or a
child id outside the mapping (SIGSEGV) would kill the process; every
transaction runs with runtime/debug.SetPanicOnFault and recovers, so each
of these is an error wrapping ErrCorrupt whose text ends "run `cfindexd
--reindex` or delete it". A panic inside the transaction's body leaves
bbolt consistent and only that call fails; one while beginning, committing
or rolling back may leave bbolt's locks held, so the store then fails
every later call with the same error and Close releases the file without
waiting on bbolt. A height at or below the tip missing from a height-keyed
bucket is ErrCorrupt, not ErrNotFound, and a stored filter longer than
MaxFilterSize is ErrCorrupt. bbolt keeps no checksum of data pages, so
damage inside a value (a filter's bytes) is returned as it is; clients
check filters against their filter headers.

MoveAside takes a store out of the way for a rebuild without opening it
with bbolt, under the file's lock. Open holds an exclusive lock on the
file until Close; a second Open of the same file, from this or another
process, fails with ErrLocked after Options.Timeout (DefaultLockTimeout if
zero) instead of hanging. SizeBytes is the file's size, which bbolt grows in
steps and never shrinks.
*/
package store
