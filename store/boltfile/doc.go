/*
Package boltfile checks a bbolt file's structure — meta pages, page
headers, freelist and B+tree nodes — before bbolt opens it, so a corrupt
file is an error rather than a panic.

bbolt trusts its file: it maps it and follows page ids and element offsets
without bounds checks, so a truncated or damaged file crashes the process
(a panic, or SIGBUS on a page past the end). Check reads the few pages
bbolt needs to open the file (both meta pages, the freelist, the root
bucket's page and the root page of each top-level bucket) with plain
preads, never through a mapping, and returns a *CorruptError, which wraps
ErrCorrupt, for anything bbolt could not use. Damage deeper in the tree is
not its job; it costs a few reads whatever the file's size.

The package knows bbolt's on-disk format version 2 and nothing of what a
file stores. Its code must not import bbolt (its tests do, to write real
files), log, or keep package-level state beyond ErrCorrupt.
*/
package boltfile
