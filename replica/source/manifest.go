package source

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// ManifestVersion is the only manifest and latest version this package
// reads.
const ManifestVersion = 1

// Digest is a SHA-256 of an object's bytes.
type Digest [32]byte

// String is the digest in lowercase hex, as the manifest writes it.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Range is one published range as the manifest lists it.
type Range struct {
	Start, End      uint32
	EndBlockHash    chainhash.Hash
	EndFilterHeader chainhash.Hash
	// Objects maps each object name of the range (without prefix) to its
	// SHA-256; it holds at least the range's headers, filter headers and
	// filters.
	Objects map[string]Digest
}

// Import is one neutrino chainimport file as the manifest lists it.
type Import struct {
	End    uint32
	SHA256 Digest
}

// Manifest is a decoded and checked manifest.json.
type Manifest struct {
	Network string
	Genesis chainhash.Hash
	// Ranges are ascending and contiguous from height 0.
	Ranges  []Range
	Imports map[string]Import
}

// Tip returns the last range, false when none is published.
func (m *Manifest) Tip() (Range, bool) {
	if len(m.Ranges) == 0 {
		return Range{}, false
	}
	return m.Ranges[len(m.Ranges)-1], true
}

// Limits on the layout's fields that no honest manifest reaches.
const (
	maxNetworkName = 32
	maxObjectName  = 128
	maxObjects     = 16
)

type jsonRange struct {
	Start           *uint32           `json:"start"`
	End             *uint32           `json:"end"`
	EndBlockHash    string            `json:"end_block_hash"`
	EndFilterHeader string            `json:"end_filter_header"`
	Objects         map[string]string `json:"objects"`
}

type jsonImport struct {
	End    *uint32 `json:"end"`
	SHA256 string  `json:"sha256"`
}

type jsonManifest struct {
	Version   int                   `json:"version"`
	Network   string                `json:"network"`
	Genesis   string                `json:"genesis"`
	RangeSize int                   `json:"range_size"`
	Ranges    []jsonRange           `json:"ranges"`
	Imports   map[string]jsonImport `json:"imports"`
}

// DecodeManifest decodes manifest.json and checks it against the layout:
// version 1, range_size 2,000, ranges contiguous from 0 with the three
// objects each must have, every hash 64 hex digits, imports ending at the
// last range. Errors wrap ErrBadManifest. The caller bounds len(b).
func DecodeManifest(b []byte) (Manifest, error) {
	var jm jsonManifest
	if err := json.Unmarshal(b, &jm); err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if jm.Version != ManifestVersion {
		return Manifest{}, fmt.Errorf("%w: version %d, want %d", ErrBadManifest, jm.Version, ManifestVersion)
	}
	if jm.RangeSize != RangeSize {
		return Manifest{}, fmt.Errorf("%w: range_size %d, want %d", ErrBadManifest, jm.RangeSize, RangeSize)
	}
	if jm.Network == "" || len(jm.Network) > maxNetworkName {
		return Manifest{}, fmt.Errorf("%w: network %q", ErrBadManifest, jm.Network)
	}
	m := Manifest{Network: jm.Network, Ranges: make([]Range, 0, len(jm.Ranges))}
	var err error
	if m.Genesis, err = decodeHash("genesis", jm.Genesis); err != nil {
		return Manifest{}, err
	}
	for i := range jm.Ranges {
		r, err := decodeRange(i, &jm.Ranges[i])
		if err != nil {
			return Manifest{}, err
		}
		m.Ranges = append(m.Ranges, r)
	}
	if len(jm.Imports) > maxObjects {
		return Manifest{}, fmt.Errorf("%w: %d imports", ErrBadManifest, len(jm.Imports))
	}
	tip, haveTip := m.Tip()
	for name, ji := range jm.Imports {
		if name != HeadersImportName && name != FilterHeadersImportName {
			return Manifest{}, fmt.Errorf("%w: unknown import %q", ErrBadManifest, name)
		}
		if ji.End == nil || !haveTip || *ji.End != tip.End {
			return Manifest{}, fmt.Errorf("%w: import %s does not end at the last range", ErrBadManifest, name)
		}
		d, err := decodeDigest("import "+name, ji.SHA256)
		if err != nil {
			return Manifest{}, err
		}
		if m.Imports == nil {
			m.Imports = make(map[string]Import, len(jm.Imports))
		}
		m.Imports[name] = Import{End: *ji.End, SHA256: d}
	}
	return m, nil
}

// decodeRange checks the i-th range of a manifest.
func decodeRange(i int, jr *jsonRange) (Range, error) {
	start := uint64(i) * RangeSize
	if jr.Start == nil || jr.End == nil || uint64(*jr.Start) != start || uint64(*jr.End) != start+RangeSize-1 {
		return Range{}, fmt.Errorf("%w: range %d is not heights %d..%d", ErrBadManifest, i, start, start+RangeSize-1)
	}
	r := Range{Start: *jr.Start, End: *jr.End}
	var err error
	what := fmt.Sprintf("range %d ", r.Start)
	if r.EndBlockHash, err = decodeHash(what+"end_block_hash", jr.EndBlockHash); err != nil {
		return Range{}, err
	}
	if r.EndFilterHeader, err = decodeHash(what+"end_filter_header", jr.EndFilterHeader); err != nil {
		return Range{}, err
	}
	if len(jr.Objects) > maxObjects {
		return Range{}, fmt.Errorf("%w: range %d has %d objects", ErrBadManifest, r.Start, len(jr.Objects))
	}
	r.Objects = make(map[string]Digest, len(jr.Objects))
	for name, hexDigest := range jr.Objects {
		if len(name) > maxObjectName {
			return Range{}, fmt.Errorf("%w: range %d: object name of %d bytes", ErrBadManifest, r.Start, len(name))
		}
		if r.Objects[name], err = decodeDigest(name, hexDigest); err != nil {
			return Range{}, err
		}
	}
	for _, name := range []string{HeadersName(r.Start), FilterHeadersName(r.Start), FiltersName(r.Start)} {
		if _, ok := r.Objects[name]; !ok {
			return Range{}, fmt.Errorf("%w: range %d lists no %s", ErrBadManifest, r.Start, name)
		}
	}
	return r, nil
}

// decodeHash reads a block hash or filter header in RPC (display) order.
func decodeHash(what, s string) (chainhash.Hash, error) {
	if len(s) != 2*chainhash.HashSize {
		return chainhash.Hash{}, fmt.Errorf("%w: %s: %d hex digits, want 64", ErrBadManifest, what, len(s))
	}
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("%w: %s: %v", ErrBadManifest, what, err)
	}
	return *h, nil
}

// decodeDigest reads a SHA-256 in hex.
func decodeDigest(what, s string) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return d, fmt.Errorf("%w: %s: sha256 of %d hex digits, want 64", ErrBadManifest, what, len(s))
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("%w: %s: sha256: %v", ErrBadManifest, what, err)
	}
	return d, nil
}
