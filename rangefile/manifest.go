package rangefile

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// ManifestVersion is the version of manifest.json and latest this package
// writes and reads.
const ManifestVersion = 1

// MaxManifestSize bounds the manifest.json a reader accepts: far above
// what a chain of ten million blocks lists.
const MaxManifestSize = 64 << 20

// ErrBadManifest is returned for a manifest.json or latest that does not
// parse or breaks the layout's rules.
var ErrBadManifest = errors.New("rangefile: bad manifest")

// Network names the chain a manifest describes.
type Network struct {
	Name    string // netparams name: main, test, testnet4, signet, regtest, simnet
	Net     wire.BitcoinNet
	Genesis chainhash.Hash
}

// Manifest is manifest.json: every published range, contiguous from 0,
// with the SHA-256 of each of its objects, and the import files.
type Manifest struct {
	Version   int                    `json:"version"`
	Network   string                 `json:"network"`
	Genesis   string                 `json:"genesis"`
	RangeSize int                    `json:"range_size"`
	Ranges    []RangeEntry           `json:"ranges"`
	Imports   map[string]ImportEntry `json:"imports"`
}

// RangeEntry is one range of the manifest. Hashes are hex, block and
// filter headers in RPC (reversed) byte order.
type RangeEntry struct {
	Start           uint32            `json:"start"`
	End             uint32            `json:"end"`
	EndBlockHash    string            `json:"end_block_hash"`
	EndFilterHeader string            `json:"end_filter_header"`
	Objects         map[string]string `json:"objects"`
}

// ImportEntry is one import file of the manifest: it covers heights
// 0..End.
type ImportEntry struct {
	End    uint32 `json:"end"`
	SHA256 string `json:"sha256"`
}

// Latest is the latest object: the newest published range and the hash of
// the manifest that lists it.
type Latest struct {
	Version         int    `json:"version"`
	Start           uint32 `json:"start"`
	End             uint32 `json:"end"`
	EndBlockHash    string `json:"end_block_hash"`
	EndFilterHeader string `json:"end_filter_header"`
	ManifestSHA256  string `json:"manifest_sha256"`
}

// NewManifest returns the manifest of ranges (contiguous from 0, at least
// one) and the two import files, which cover heights 0 to the last
// range's end.
func NewManifest(nw Network, ranges []RangeEntry, headersImport, filterHeadersImport Object) Manifest {
	end := ranges[len(ranges)-1].End
	return Manifest{
		Version: ManifestVersion, Network: nw.Name, Genesis: nw.Genesis.String(), RangeSize: Size, Ranges: ranges,
		Imports: map[string]ImportEntry{
			HeadersImportName:       {End: end, SHA256: hexOf(headersImport.SHA256)},
			FilterHeadersImportName: {End: end, SHA256: hexOf(filterHeadersImport.SHA256)},
		},
	}
}

// Encode returns the manifest's bytes: compact JSON, map keys sorted, one
// newline at the end.
func (m *Manifest) Encode() []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("rangefile: encode manifest: %v", err)) // only strings, numbers and maps of them
	}
	return append(b, '\n')
}

// LatestOf returns the latest object of the manifest whose bytes are
// manifest.
func LatestOf(m *Manifest, manifest []byte) Latest {
	r := m.Ranges[len(m.Ranges)-1]
	return Latest{Version: ManifestVersion, Start: r.Start, End: r.End, EndBlockHash: r.EndBlockHash,
		EndFilterHeader: r.EndFilterHeader, ManifestSHA256: hexOf(sha256Sum(manifest))}
}

// Encode returns the latest object's bytes, as Manifest.Encode.
func (l Latest) Encode() []byte {
	b, err := json.Marshal(l)
	if err != nil {
		panic(fmt.Sprintf("rangefile: encode latest: %v", err))
	}
	return append(b, '\n')
}

// ParseManifest decodes manifest.json and checks its shape: the version,
// the range size, ranges contiguous from 0, well-formed hashes, and import
// files ending at the last range's end. It does not check the hashes
// against any object.
func ParseManifest(b []byte) (Manifest, error) {
	var m Manifest
	if len(b) > MaxManifestSize {
		return m, fmt.Errorf("%w: %d bytes", ErrBadManifest, len(b))
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if m.Version != ManifestVersion || m.RangeSize != Size {
		return m, fmt.Errorf("%w: version %d, range size %d", ErrBadManifest, m.Version, m.RangeSize)
	}
	if !isHash(m.Genesis) {
		return m, fmt.Errorf("%w: genesis %q", ErrBadManifest, m.Genesis)
	}
	for i, r := range m.Ranges {
		start := uint64(i) * Size
		if uint64(r.Start) != start || uint64(r.End) != start+Size-1 {
			return m, fmt.Errorf("%w: range %d is %d..%d", ErrBadManifest, i, r.Start, r.End)
		}
		if !isHash(r.EndBlockHash) || !isHash(r.EndFilterHeader) {
			return m, fmt.Errorf("%w: range %d: malformed end hashes", ErrBadManifest, r.Start)
		}
		for _, name := range []string{HeadersName(r.Start), FilterHeadersName(r.Start), FiltersName(r.Start)} {
			if _, ok := r.Objects[name]; !ok {
				return m, fmt.Errorf("%w: range %d lists no %s", ErrBadManifest, r.Start, name)
			}
		}
		for name, h := range r.Objects {
			if !isHash(h) || !rangeObject(name, r.Start) {
				return m, fmt.Errorf("%w: range %d: object %q", ErrBadManifest, r.Start, name)
			}
		}
	}
	if len(m.Ranges) == 0 {
		return m, fmt.Errorf("%w: no range", ErrBadManifest)
	}
	end := m.Ranges[len(m.Ranges)-1].End
	if len(m.Imports) != 2 {
		return m, fmt.Errorf("%w: %d import files", ErrBadManifest, len(m.Imports))
	}
	for _, name := range []string{HeadersImportName, FilterHeadersImportName} {
		imp, ok := m.Imports[name]
		if !ok || imp.End != end || !isHash(imp.SHA256) {
			return m, fmt.Errorf("%w: import file %s", ErrBadManifest, name)
		}
	}
	return m, nil
}

// ParseLatest decodes a latest object and checks its shape.
func ParseLatest(b []byte) (Latest, error) {
	var l Latest
	if len(b) > 4096 {
		return l, fmt.Errorf("%w: latest of %d bytes", ErrBadManifest, len(b))
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("%w: latest: %w", ErrBadManifest, err)
	}
	if l.Version != ManifestVersion || l.Start%Size != 0 || uint64(l.End) != uint64(l.Start)+Size-1 ||
		!isHash(l.EndBlockHash) || !isHash(l.EndFilterHeader) || !isHash(l.ManifestSHA256) {
		return l, fmt.Errorf("%w: latest %+v", ErrBadManifest, l)
	}
	return l, nil
}

// rangeObject reports whether name is one of the objects of the range
// starting at start.
func rangeObject(name string, start uint32) bool {
	switch name {
	case HeadersName(start), FilterHeadersName(start), FiltersName(start):
		return true
	}
	for _, d := range DustLevels {
		if name == TweaksName(d, start) {
			return true
		}
	}
	return false
}

// isHash reports whether s is 64 lowercase hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f') {
			return false
		}
	}
	return true
}

func hexOf(h [32]byte) string { return hex.EncodeToString(h[:]) }
