/*
Package store keeps cfindexd's compact block filters (BIP-157/158) in one
bbolt file: the active chain's block hashes, headers, filters, filter
headers, filter hashes and cfilter message checksums by height, an index
from block hash to height, the blocks a reorg disconnected, by hash (Bitcoin
Core still serves filters of stale blocks), and the silent-payment index
(store/spindex, written and trimmed in the same transactions).

The package owns the file and its layout (schema.go) and exposes domain
verbs (CommitBatch, Rollback, FiltersForStop, EachFilter, ...), never bbolt
types. It does not build filters or filter headers (the indexer does); it
hashes each filter, computes the checksum of the P2P cfilter message
carrying it (wireframe.CFilterHasher), and checks that the filter headers
it is given chain. It must not talk to the node or peers, log, or keep
package-level state.

# Model

The active chain grows only at its tip. The single writer, the indexer,
appends blocks with CommitBatch: one bbolt read-write transaction per
batch writes its blocks and moves the tip, and a batch whose filter headers
do not continue the tip's is refused (ErrFilterHeaderMismatch), so the
stored filter-header chain is always that of the stored filters. A crash at
any instant leaves the file at the last committed batch; nothing needs
recovery on Open. A reorg is Rollback(toHeight), one transaction moving the
blocks above toHeight to the stale set, then CommitBatch of the new branch;
committing a stale block takes it back out.

Readers see one committed snapshot each and run alongside the writer;
returned slices are copies and errors wrap the sentinels in errors.go.
Range reads return at most MaxRange entries. EachFilter streams the filters of a BlockHashesForStop
answer in as many short read transactions as its caller wants and returns
the same filters whatever reorgs happened meanwhile, because a block's
filter is fixed by its hash and stale blocks keep theirs; each comes with
its stored checksum, so a P2P server frames it without hashing. An answer
built from several reads takes them from one Snapshot (Read). Tip is served
from memory; TipChanged wakes waiters after each commit or rollback.

Each block header (with its block hash), filter, filter hash, filter
header and cfilter checksum has a CRC32C that every read checks, and a
heights value is checked against the block hash at the height it names: a
value failing its check is never returned (the read fails with a
*MismatchError), and Repair rewrites the height from the node's header
and a rebuilt filter once they fit the stored chains (RepairHeightIndex
rebuilds a heights value). Stale values carry a CRC too; they are
reported, not repaired. Older schemas are upgraded at Open without a
re-index (upgrade.go, upgradecrc.go).

# Caveats

Options.NoSync skips fsyncs: a killed process still leaves a consistent
file, a power loss may not; it is for tests. Each read method takes its own
snapshot, and Tip can lag the file by a commit's final fsync. A Read
callback must not wait on the network: a commit that grows the file waits
for it. Open locks the file (ErrLocked after Options.Timeout) and checks
its meta and root pages with plain reads, not bbolt's full walk; damage
deeper in the tree is found by the read that meets it (bbolt's panics and
faults on it are recovered) and returned as ErrCorrupt, whose text says to
reindex. The file as a file (its lock, durable creation, moving it
aside) is store/storefile's. A new store is built in a temporary file and linked into place, so a
failed create leaves none. An older build refuses a newer schema
(ErrSchemaVersion).
*/
package store
