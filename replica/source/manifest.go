package source

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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

// DecodeManifest decodes manifest.json and checks it against the layout:
// version 1, range_size 2,000, ranges contiguous from 0 with the three
// objects each must have, every hash 64 hex digits, imports ending at the
// last range. Errors wrap ErrBadManifest. The caller bounds len(b).
//
// The ranges are decoded and checked one at a time, so a manifest that
// declares many ranges costs memory only for the valid ones before the
// first that is not: a small multiple of its bytes.
func DecodeManifest(b []byte) (Manifest, error) {
	m, err := decodeManifest(b)
	if err != nil {
		return Manifest{}, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	return m, nil
}

func decodeManifest(b []byte) (Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := expectDelim(dec, '{'); err != nil {
		return Manifest{}, err
	}
	var (
		m                   Manifest
		version, rangeSize  int
		genesis             string
		imports             map[string]jsonImport
		seenRanges, seenGen bool
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Manifest{}, err
		}
		key, _ := tok.(string)
		switch key {
		case "version":
			err = dec.Decode(&version)
		case "network":
			err = dec.Decode(&m.Network)
		case "genesis":
			err, seenGen = dec.Decode(&genesis), true
		case "range_size":
			err = dec.Decode(&rangeSize)
		case "ranges":
			m.Ranges, err = decodeRanges(dec)
			seenRanges = true
		case "imports":
			err = dec.Decode(&imports)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return Manifest{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return Manifest{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Manifest{}, errors.New("data after the manifest")
	}
	switch {
	case version != ManifestVersion:
		return Manifest{}, fmt.Errorf("version %d, want %d", version, ManifestVersion)
	case rangeSize != RangeSize:
		return Manifest{}, fmt.Errorf("range_size %d, want %d", rangeSize, RangeSize)
	case m.Network == "" || len(m.Network) > maxNetworkName:
		return Manifest{}, fmt.Errorf("network %q", m.Network)
	case !seenRanges || !seenGen:
		return Manifest{}, errors.New("no ranges or no genesis")
	}
	var err error
	if m.Genesis, err = decodeHash("genesis", genesis); err != nil {
		return Manifest{}, err
	}
	if m.Imports, err = checkImports(&m, imports); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// decodeRanges decodes and checks the ranges array one range at a time.
func decodeRanges(dec *json.Decoder) ([]Range, error) {
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	var out []Range
	for dec.More() {
		var jr jsonRange
		if err := dec.Decode(&jr); err != nil {
			return nil, fmt.Errorf("range %d: %w", len(out), err)
		}
		r, err := decodeRange(len(out), &jr)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, expectDelim(dec, ']')
}

// checkImports checks the manifest's imports against its last range.
func checkImports(m *Manifest, imports map[string]jsonImport) (map[string]Import, error) {
	if len(imports) > maxObjects {
		return nil, fmt.Errorf("%d imports", len(imports))
	}
	tip, haveTip := m.Tip()
	var out map[string]Import
	for name, ji := range imports {
		if name != HeadersImportName && name != FilterHeadersImportName {
			return nil, fmt.Errorf("unknown import %q", name)
		}
		if ji.End == nil || !haveTip || *ji.End != tip.End {
			return nil, fmt.Errorf("import %s does not end at the last range", name)
		}
		d, err := decodeDigest("import "+name, ji.SHA256)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make(map[string]Import, len(imports))
		}
		out[name] = Import{End: *ji.End, SHA256: d}
	}
	return out, nil
}

// expectDelim reads the JSON delimiter want.
func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%v where %v was expected", tok, want)
	}
	return nil
}

// decodeRange checks the i-th range of a manifest.
func decodeRange(i int, jr *jsonRange) (Range, error) {
	start := uint64(i) * RangeSize
	if jr.Start == nil || jr.End == nil || uint64(*jr.Start) != start || uint64(*jr.End) != start+RangeSize-1 {
		return Range{}, fmt.Errorf("range %d is not heights %d..%d", i, start, start+RangeSize-1)
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
		return Range{}, fmt.Errorf("range %d has %d objects", r.Start, len(jr.Objects))
	}
	r.Objects = make(map[string]Digest, len(jr.Objects))
	for name, hexDigest := range jr.Objects {
		if len(name) > maxObjectName {
			return Range{}, fmt.Errorf("range %d: object name of %d bytes", r.Start, len(name))
		}
		if r.Objects[name], err = decodeDigest(name, hexDigest); err != nil {
			return Range{}, err
		}
	}
	for _, name := range []string{HeadersName(r.Start), FilterHeadersName(r.Start), FiltersName(r.Start)} {
		if _, ok := r.Objects[name]; !ok {
			return Range{}, fmt.Errorf("range %d lists no %s", r.Start, name)
		}
	}
	return r, nil
}

// decodeHash reads a block hash or filter header in RPC (display) order.
func decodeHash(what, s string) (chainhash.Hash, error) {
	if len(s) != 2*chainhash.HashSize {
		return chainhash.Hash{}, fmt.Errorf("%s: %d hex digits, want 64", what, len(s))
	}
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("%s: %w", what, err)
	}
	return *h, nil
}

// decodeDigest reads a SHA-256 in hex.
func decodeDigest(what, s string) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return d, fmt.Errorf("%s: sha256 of %d hex digits, want 64", what, len(s))
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("%s: sha256: %w", what, err)
	}
	return d, nil
}
