// Package source reads the published layout of issue 20 (see
// docs/deployment.md) from a base URL: a bucket's public HTTP endpoint, a
// CDN in front of it, or another cfindexd's HTTP server. It GETs base + "/"
// + name for `latest`, `manifest.json` and each range's objects, and hands
// back bytes whose size and SHA-256 it has checked.
//
// It owns the source's bytes until they are checked, and nothing else: it
// knows no chain rules (package replica checks the headers' proof of work,
// links and difficulty, and the filter-header chain) and writes nothing.
//
// The source is untrusted. Every object has a size bound known before the
// request (headers and filter headers exactly, filters at most
// Limits.MaxFiltersObject, the manifest at most Limits.MaxManifest); a
// declared Content-Length above it is refused before anything is read, and
// the body is read through a limit into a buffer that grows with the bytes
// that arrive, never with what a header declares. The manifest and latest
// decoders check every field (fuzz targets and allocation tests beside
// them). Requests have timeouts and are retried with backoff
// (internal/backoff) on transport errors and 5xx/429 answers; a 404, a
// wrong size or a wrong hash is final, and errors name the object
// ("filters/2000: sha256 mismatch: ...").
package source
