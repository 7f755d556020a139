// Package publish writes the sealed ranges (package rangefile) to an
// S3-compatible bucket as they become final, so that the bucket, and any
// CDN in front of it, serves them with no cfindexd in the path
// (docs/deployment.md).
//
// A Publisher runs at start and at every tip change. For each final range
// from height 0 up that the bucket's manifest does not list yet it builds
// the range's objects from one committed state of the store and, for each,
// asks the bucket: an object present with the same SHA-256 is kept, a
// missing one is put (one PUT, checked by the server against its SHA-256),
// and one present with another SHA-256 stops the publisher with
// ErrConflict naming it — a published object is never rewritten. Then it
// writes the import files, manifest.json and latest, in that order, each
// only if its bytes changed. The import files are never held: a first
// streaming pass hashes each (rangefile.HashImport), a second streams it
// to the bucket (Bucket.PutStream, a multipart upload of objstore.PartSize
// parts), checking on the way that its bytes hash as the first's did, so
// the publisher's memory is one range, one part and the manifest whatever
// the chain's length.
//
// Because each PUT is atomic and the manifest is written only after every
// object it lists is in place, a publisher killed at any point leaves a
// bucket whose manifest names only complete, correct objects, and the next
// start goes on from there without putting any object already there.
package publish
