package source

import "strconv"

// RangeSize is the number of heights of each published range.
const RangeSize = 2000

// Sizes of the fixed-size objects of one range.
const (
	HeaderSize          = 80
	FilterHeaderSize    = 32
	HeadersObjectSize   = RangeSize * HeaderSize
	FilterHeadersObject = RangeSize * FilterHeaderSize
	// ImportMetaSize is the neutrino chainimport file's metadata header.
	ImportMetaSize = 10
)

// Object names of the layout, relative to the base URL.
const (
	ManifestName            = "manifest.json"
	LatestName              = "latest"
	HeadersImportName       = "headers/import/latest"
	FilterHeadersImportName = "filter-headers/import/latest"
)

// HeadersName is the name of the block headers of the range at start.
func HeadersName(start uint32) string { return "headers/" + strconv.FormatUint(uint64(start), 10) }

// FilterHeadersName is the name of the filter headers of the range at start.
func FilterHeadersName(start uint32) string {
	return "filter-headers/" + strconv.FormatUint(uint64(start), 10)
}

// FiltersName is the name of the basic filters of the range at start.
func FiltersName(start uint32) string { return "filters/" + strconv.FormatUint(uint64(start), 10) }
