package source

import "errors"

// Errors callers act on; each is wrapped with the object's name.
var (
	// ErrNotFound: the source answered 404 for the object.
	ErrNotFound = errors.New("not found at the source")
	// ErrTooLarge: the object is larger than its bound.
	ErrTooLarge = errors.New("larger than its bound")
	// ErrSize: the object's size is not the one its name requires.
	ErrSize = errors.New("wrong size")
	// ErrHashMismatch: the object's SHA-256 is not the one the manifest
	// (or latest, for the manifest) names.
	ErrHashMismatch = errors.New("sha256 mismatch")
	// ErrBadManifest: manifest.json or latest does not decode or breaks
	// the layout's rules.
	ErrBadManifest = errors.New("malformed")
)
