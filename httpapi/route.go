package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/cfindexd/cfindexd/httpapi/corerest"
)

// route names one endpoint; its String is the "route" label of the HTTP
// metrics, so the label set stays small whatever clients request.
type route int

const (
	routeNotFound route = iota
	routeRESTUnknown
	routeBlockFilter
	routeBlockFilterHeaders
	routeHeaders
	routeBlockHashByHeight
	routeBulkIndex
	routeBulkHeaders
	routeBulkFilterHeaders
	routeBulkFilters
	routeNeutrinoBlockHeaders
	routeNeutrinoFilterHeaders
	routeBulkBad
	routeMetrics
	routeHealthz
	routeReadyz
	routeStatus
	routeSPTweaks
	routeSPFiles
	routeSPCheckpoints
	routeBlindBit
	routeRangeHeaders
	routeRangeFilterHeaders
	routeRangeFilters
	routeRangeImport
	routeManifest
	routeLatest
)

var routeNames = [...]string{
	routeNotFound:              "other",
	routeRESTUnknown:           "rest_unknown",
	routeBlockFilter:           "rest_blockfilter",
	routeBlockFilterHeaders:    "rest_blockfilterheaders",
	routeHeaders:               "rest_headers",
	routeBlockHashByHeight:     "rest_blockhashbyheight",
	routeBulkIndex:             "bulk_index",
	routeBulkHeaders:           "bulk_headers",
	routeBulkFilterHeaders:     "bulk_filterheaders",
	routeBulkFilters:           "bulk_filters",
	routeNeutrinoBlockHeaders:  "bulk_neutrino_blockheaders",
	routeNeutrinoFilterHeaders: "bulk_neutrino_filterheaders",
	routeBulkBad:               "bulk_bad_request",
	routeMetrics:               "metrics",
	routeHealthz:               "healthz",
	routeReadyz:                "readyz",
	routeStatus:                "status",
	routeSPTweaks:              "sp_tweaks",
	routeSPFiles:               "sp_files",
	routeSPCheckpoints:         "sp_checkpoints",
	routeBlindBit:              "blindbit",
	routeRangeHeaders:          "range_headers",
	routeRangeFilterHeaders:    "range_filterheaders",
	routeRangeFilters:          "range_filters",
	routeRangeImport:           "range_import",
	routeManifest:              "manifest",
	routeLatest:                "latest",
}

func (r route) String() string { return routeNames[r] }

// RouteCodes returns every route label HTTPRequest reports, each with the
// status code its requests are answered with when nothing goes wrong: the
// series worth exporting before the first request. A path served by no
// route is answered 404 (never 200), a malformed bulk request 400.
func RouteCodes() map[string]int {
	codes := make(map[string]int, len(routeNames))
	for r := range route(len(routeNames)) {
		codes[r.String()] = r.usualCode()
	}
	return codes
}

// usualCode is the status code of r's answers when nothing goes wrong.
func (r route) usualCode() int {
	switch r {
	case routeNotFound, routeRESTUnknown:
		return http.StatusNotFound
	case routeBulkBad:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// isREST reports whether r is under Core's /rest/ prefix.
func (r route) isREST() bool {
	switch r {
	case routeRESTUnknown, routeBlockFilter, routeBlockFilterHeaders, routeHeaders, routeBlockHashByHeight:
		return true
	}
	return false
}

// restRoute is the route of a Core REST endpoint.
func restRoute(e corerest.Endpoint) route {
	switch e {
	case corerest.BlockFilter:
		return routeBlockFilter
	case corerest.BlockFilterHeaders:
		return routeBlockFilterHeaders
	case corerest.Headers:
		return routeHeaders
	case corerest.BlockHashByHeight:
		return routeBlockHashByHeight
	}
	return routeRESTUnknown
}

// BulkInterval is the alignment and the maximum length of the bulk header,
// filter-header and filter files.
const BulkInterval = 2000

// target is a parsed request target.
type target struct {
	route route
	rest  corerest.Request // the Core-compatible /rest/ routes
	// Bulk ranges, inclusive. ranged is false for the whole-chain neutrino
	// files and for /bulk/filters/<start>.bin, whose end depends on the tip.
	start, end uint32
	ranged     bool
	badReason  string // routeBulkBad
	sp         spTarget
	// layoutFilters: routeRangeImport names the filter-header file.
	layoutFilters bool
}

// parseTarget maps an escaped request path and its raw query to a target.
// It never fails: unknown paths give routeNotFound or routeRESTUnknown and
// malformed parameters are carried in the target for the handler to
// answer. It is pure, so FuzzParsePath can drive it.
func parseTarget(path, rawQuery string) target {
	if req, ok := corerest.Parse(path, rawQuery); ok {
		return target{route: restRoute(req.Endpoint), rest: req}
	}
	switch {
	case strings.HasPrefix(path, "/bulk/"):
		return parseBulk(path[len("/bulk/"):])
	case strings.HasPrefix(path, "/sp/"):
		return parseSP(path[len("/sp/"):])
	case strings.HasPrefix(path, blindBitPrefix):
		return parseBlindBit(path[len(blindBitPrefix):], rawQuery)
	case isLayoutPath(path):
		if t, ok := parseLayout(path); ok {
			return t
		}
	}
	switch path {
	case "/metrics":
		return target{route: routeMetrics}
	case "/healthz":
		return target{route: routeHealthz}
	case "/readyz":
		return target{route: routeReadyz}
	case "/status":
		return target{route: routeStatus}
	}
	return target{route: routeNotFound}
}

// parseBulk parses the part of a /bulk/ path after the prefix.
func parseBulk(p string) target {
	bad := func(reason string) target { return target{route: routeBulkBad, badReason: reason} }
	switch p {
	case "index.json":
		return target{route: routeBulkIndex}
	case "neutrino/blockheaders.bin":
		return target{route: routeNeutrinoBlockHeaders}
	case "neutrino/filterheaders.bin":
		return target{route: routeNeutrinoFilterHeaders}
	}
	dir, file, ok := cutLast(p, '/')
	if !ok {
		return target{route: routeNotFound}
	}
	name, found := strings.CutSuffix(file, ".bin")
	if !found {
		return target{route: routeNotFound}
	}
	var r route
	aligned := true
	switch dir {
	case "headers":
		r = routeBulkHeaders
	case "filterheaders":
		r = routeBulkFilterHeaders
	case "filters":
		start, ok := parseHeight(name)
		if !ok {
			return bad("start height must be a decimal number without leading zeros")
		}
		if start%BulkInterval != 0 {
			return bad("start height must be a multiple of " + strconv.Itoa(BulkInterval))
		}
		return target{route: routeBulkFilters, start: start}
	case "neutrino/blockheaders":
		r, aligned = routeNeutrinoBlockHeaders, false
	case "neutrino/filterheaders":
		r, aligned = routeNeutrinoFilterHeaders, false
	default:
		return target{route: routeNotFound}
	}
	a, b, ok := strings.Cut(name, "-")
	if !ok {
		return bad("range must be <start>-<end>")
	}
	start, ok1 := parseHeight(a)
	end, ok2 := parseHeight(b)
	if !ok1 || !ok2 {
		return bad("heights must be decimal numbers without leading zeros")
	}
	if end < start {
		return bad("range end lies below its start")
	}
	if aligned && (start%BulkInterval != 0 || end-start >= BulkInterval) {
		return bad("range must start at a multiple of " + strconv.Itoa(BulkInterval) +
			" and hold at most " + strconv.Itoa(BulkInterval) + " heights")
	}
	return target{route: r, start: start, end: end, ranged: true}
}

// parseHeight accepts canonical decimal uint32 values only ("0", "2000"),
// so each range has exactly one URL for caches.
func parseHeight(s string) (uint32, bool) {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}

func cutLast(s string, sep byte) (string, string, bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}
