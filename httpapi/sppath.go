package httpapi

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cfindexd/cfindexd/rangefile"
)

// spTarget is the silent-payment part of a parsed request: which file or
// BlindBit answer, and its dust limit.
type spTarget struct {
	file spFileKind
	dust uint64
	// blindBit names the BlindBit endpoint (the path below the prefix
	// without its height); blindBitBad is the text of a 400 answer.
	blindBit    string
	blindBitBad string
}

// spFileKind names one of the silent-payment range files.
type spFileKind uint8

const (
	spFileTweaks    spFileKind = iota // block-dn's /sp/tweaks/<dust>/<start>
	spFileTweakData                   // /sp/tweakdata/<start>
	spFileFilters                     // /sp/filters/<start>
	spFileHeaders                     // /sp/headers/<start>
)

// blindBitPrefix is where the BlindBit Oracle v1 endpoints live: a
// BlindBit client is given http://host:port/blindbit as its base URL.
const blindBitPrefix = "/blindbit/"

// parseSP parses the part of an /sp/ path after the prefix.
func parseSP(p string) target {
	bad := func(reason string) target { return target{route: routeBulkBad, badReason: reason} }
	if p == "checkpoints" {
		return target{route: routeSPCheckpoints}
	}
	dir, name, ok := cutLast(p, '/')
	if !ok {
		return target{route: routeNotFound}
	}
	t := target{route: routeSPFiles}
	switch dir {
	case "tweakdata":
		t.sp.file = spFileTweakData
	case "filters":
		t.sp.file = spFileFilters
	case "headers":
		t.sp.file = spFileHeaders
	default:
		level, found := strings.CutPrefix(dir, "tweaks/")
		if !found {
			return target{route: routeNotFound}
		}
		dust, ok := parseHeight(level)
		if !ok || !slices.Contains(rangefile.DustLevels[:], uint64(dust)) {
			return bad("dust limit must be one of 0, 600, 1000, 3750")
		}
		t.route, t.sp.file, t.sp.dust = routeSPTweaks, spFileTweaks, uint64(dust)
	}
	start, ok := parseHeight(name)
	if !ok {
		return bad("start height must be a decimal number without leading zeros")
	}
	if start%BulkInterval != 0 {
		return bad("start height must be a multiple of " + strconv.Itoa(BulkInterval))
	}
	t.start = start
	return t
}

// parseBlindBit parses the part of a BlindBit path after blindBitPrefix
// and its query, the way BlindBit Oracle does: a decimal height, an
// optional decimal dustLimit (0 when absent).
func parseBlindBit(p, rawQuery string) target {
	t := target{route: routeBlindBit}
	switch p {
	case "info", "block-height":
		t.sp.blindBit = p
		return t
	}
	dir, name, ok := cutLast(p, '/')
	switch {
	case !ok:
		return target{route: routeNotFound}
	case dir == "tweaks", dir == "tweak-index", dir == "filter/new-utxos",
		dir == "filter/spent", dir == "utxos", dir == "spent-index":
		t.sp.blindBit = dir
	case strings.HasPrefix(dir, "filter/"):
		t.sp.blindBit, t.sp.blindBitBad = dir, "invalid filter type"
		return t
	default:
		return target{route: routeNotFound}
	}
	h, err := strconv.ParseUint(name, 10, 32)
	if err != nil {
		t.sp.blindBitBad = "could not parse block height"
		return t
	}
	t.start = uint32(h)
	if d, ok := blindBitDust(rawQuery); ok {
		if t.sp.dust, err = strconv.ParseUint(d, 10, 64); err != nil {
			t.sp.blindBitBad = "Invalid dustLimit parameter"
		}
	}
	return t
}

// blindBitDust returns the first dustLimit value of rawQuery and whether
// there is one. It reads the query in place: a client's long query costs
// no allocation beyond the value.
func blindBitDust(rawQuery string) (string, bool) {
	for rawQuery != "" {
		var kv string
		kv, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k == "dustLimit" {
			if u, err := url.QueryUnescape(v); err == nil {
				return u, true
			}
			return v, true
		}
	}
	return "", false
}
