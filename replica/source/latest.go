package source

import (
	"encoding/json"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// Latest is a decoded and checked `latest` object: the newest published
// range and the SHA-256 of the manifest that lists it.
type Latest struct {
	Start, End      uint32
	EndBlockHash    chainhash.Hash
	EndFilterHeader chainhash.Hash
	ManifestSHA256  Digest
}

type jsonLatest struct {
	Version         int     `json:"version"`
	Start           *uint32 `json:"start"`
	End             *uint32 `json:"end"`
	EndBlockHash    string  `json:"end_block_hash"`
	EndFilterHeader string  `json:"end_filter_header"`
	ManifestSHA256  string  `json:"manifest_sha256"`
}

// DecodeLatest decodes `latest` and checks it: version 1, a range start
// that is a multiple of 2,000 with its end, 64-hex-digit hashes. Errors
// wrap ErrBadManifest. The caller bounds len(b).
func DecodeLatest(b []byte) (Latest, error) {
	var jl jsonLatest
	if err := json.Unmarshal(b, &jl); err != nil {
		return Latest{}, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if jl.Version != ManifestVersion {
		return Latest{}, fmt.Errorf("%w: version %d, want %d", ErrBadManifest, jl.Version, ManifestVersion)
	}
	if jl.Start == nil || jl.End == nil || *jl.Start%RangeSize != 0 || uint64(*jl.End) != uint64(*jl.Start)+RangeSize-1 {
		return Latest{}, fmt.Errorf("%w: not a range of %d heights", ErrBadManifest, RangeSize)
	}
	l := Latest{Start: *jl.Start, End: *jl.End}
	var err error
	if l.EndBlockHash, err = decodeHash("end_block_hash", jl.EndBlockHash); err == nil {
		if l.EndFilterHeader, err = decodeHash("end_filter_header", jl.EndFilterHeader); err == nil {
			l.ManifestSHA256, err = decodeDigest("manifest_sha256", jl.ManifestSHA256)
		}
	}
	if err != nil {
		return Latest{}, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	return l, nil
}

// Matches reports whether the manifest's last range is the one l names.
func (l *Latest) Matches(m *Manifest) bool {
	tip, ok := m.Tip()
	return ok && tip.Start == l.Start && tip.End == l.End && tip.EndBlockHash == l.EndBlockHash && tip.EndFilterHeader == l.EndFilterHeader
}
