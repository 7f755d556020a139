package rangefile

import "strconv"

// Size is the number of heights of one range, and the alignment of its
// start.
const Size = 2000

// Cache-Control values of the objects: a final range's objects never
// change; the import files, manifest.json and latest follow the chain.
const (
	ImmutableCacheControl = "public, max-age=31536000, immutable"
	MutableCacheControl   = "public, max-age=60"
)

// Names of the mutable objects.
const (
	HeadersImportName       = "headers/import/latest"
	FilterHeadersImportName = "filter-headers/import/latest"
	ManifestName            = "manifest.json"
	LatestName              = "latest"
)

// DustLevels are block-dn's dust levels of the silent-payment tweak files,
// in satoshis, in the order their objects are listed.
var DustLevels = [...]uint64{0, 600, 1000, 3750}

// HeadersName is the name of a range's block-header object.
func HeadersName(start uint32) string { return "headers/" + itoa(start) }

// FilterHeadersName is the name of a range's filter-header object.
func FilterHeadersName(start uint32) string { return "filter-headers/" + itoa(start) }

// FiltersName is the name of a range's filter object.
func FiltersName(start uint32) string { return "filters/" + itoa(start) }

// TweaksName is the name of a range's silent-payment tweak object at a
// dust level.
func TweaksName(dust uint64, start uint32) string {
	return "sp/tweaks/" + strconv.FormatUint(dust, 10) + "/" + itoa(start)
}

// End is the last height of the range starting at start.
func End(start uint32) uint32 { return start + Size - 1 }

// Final reports whether the range starting at start is full and final
// under tip: its end at least depth below the tip.
func Final(start, tip, depth uint32) bool {
	return uint64(start)+Size-1+uint64(depth) <= uint64(tip)
}

// FinalCount returns how many ranges, from height 0 up, are final under
// tip; the newest of them starts at (n-1)*Size.
func FinalCount(tip, depth uint32) uint32 {
	if uint64(tip) < uint64(depth) {
		return 0
	}
	return uint32((uint64(tip-depth) + 1) / Size)
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
