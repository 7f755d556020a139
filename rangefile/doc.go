// Package rangefile is the sealed 2,000-block range files: their names,
// their bytes and the manifest that lists them (docs/deployment.md).
//
// One range holds the heights start..start+Size-1, start a multiple of
// Size. A range is final when its end is at least the reorg safety depth
// below the indexed tip; only full, final ranges have objects. Each final
// range has the immutable objects headers/<start>, filter-headers/<start>,
// filters/<start> and, when the silent-payment index covers it,
// sp/tweaks/<dust>/<start> for each of block-dn's dust levels. The mutable
// objects headers/import/latest and filter-headers/import/latest (neutrino
// chainimport files of heights 0..E, E the end of the newest final range),
// manifest.json and latest describe them.
//
// The encoders here are the only code that writes these bytes: cfindexd's
// HTTP server (the /bulk files, the range routes, /sp/tweaks) and the
// publisher (package publish) both call them, so an object in a bucket is
// byte for byte what cfindexd serves for the same range.
//
// The package reads the chain through the narrow Reader and TweakIndex
// interfaces and knows no store, server or bucket.
package rangefile
