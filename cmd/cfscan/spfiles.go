package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// The silent-payment range files of docs/silent-payments.md section 6, as a
// server sends them. Every decoder here reads untrusted bytes: it checks
// lengths before it slices or allocates, and records are subslices of the
// body (one slice header per record, each record at least one byte).
const (
	// spFileHeights is how many heights one range file covers at most.
	spFileHeights = 2000
	// spHeaderRecord is one /sp/headers record: block hash, header, tweak
	// hash, filter hash.
	spHeaderRecord = 4 * chainhash.HashSize
	// spHeadersFileMax is the largest /sp/headers body.
	spHeadersFileMax = spFileHeights * spHeaderRecord
	// spMaxRecord bounds one block's tweak data or taproot filter: neither
	// can be larger than the block (every tweak record needs a transaction
	// of more bytes than the record, every filter element a 43-byte output).
	spMaxRecord = wire.MaxBlockPayload
	// spCheckpointInterval is the distance between two commitment
	// checkpoints.
	spCheckpointInterval = 1000
	// spCheckpointsMax bounds the /sp/checkpoints body: a header every 1,000
	// blocks for far more blocks than Bitcoin has.
	spCheckpointsMax = 1 << 20
)

// errSPFormat marks a server answer that is not in the documented format.
var errSPFormat = errors.New("malformed answer")

// spHeader is one /sp/headers record.
type spHeader struct {
	BlockHash, Header, TweakHash, FilterHash chainhash.Hash
}

// parseSPRecords splits a /sp/tweakdata or /sp/filters body into its
// records: per height CompactSize(len) || len bytes, each at most
// maxRecord bytes and at most maxRecords of them.
func parseSPRecords(body []byte, maxRecord, maxRecords int) ([][]byte, error) {
	var out [][]byte
	r := wirescan.NewReader(body)
	for r.Len() > 0 {
		if len(out) == maxRecords {
			return nil, fmt.Errorf("%w: more than %d records", errSPFormat, maxRecords)
		}
		n, err := r.CompactSize()
		if err != nil {
			return nil, fmt.Errorf("%w: record %d length: %v", errSPFormat, len(out), err)
		}
		if n > uint64(maxRecord) {
			return nil, fmt.Errorf("%w: record %d is %d bytes, at most %d", errSPFormat, len(out), n, maxRecord)
		}
		rec, err := r.Next(int(n))
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", errSPFormat, len(out), err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// parseSPHeaders reads a /sp/headers body: a whole number of 128-byte
// records, at most one range file's.
func parseSPHeaders(body []byte) ([]spHeader, error) {
	if len(body)%spHeaderRecord != 0 || len(body) > spHeadersFileMax {
		return nil, fmt.Errorf("%w: %d bytes of 128-byte header records", errSPFormat, len(body))
	}
	out := make([]spHeader, len(body)/spHeaderRecord)
	for i := range out {
		rec := body[i*spHeaderRecord:]
		copy(out[i].BlockHash[:], rec[0:32])
		copy(out[i].Header[:], rec[32:64])
		copy(out[i].TweakHash[:], rec[64:96])
		copy(out[i].FilterHash[:], rec[96:128])
	}
	return out, nil
}

// spCheckpoints is /sp/checkpoints, hashes decoded.
type spCheckpoints struct {
	StartHeight uint32
	Height      uint32
	BlockHash   chainhash.Hash
	Header      chainhash.Hash
	// Checkpoints are the headers at every multiple of 1,000 from
	// StartHeight up to Height, the first at firstCheckpoint(StartHeight).
	Checkpoints []chainhash.Hash
}

// firstCheckpoint is the lowest checkpoint height at or above start.
func firstCheckpoint(start uint32) uint64 {
	return (uint64(start) + spCheckpointInterval - 1) / spCheckpointInterval * spCheckpointInterval
}

// at returns the checkpoint at height h, if h is one.
func (c *spCheckpoints) at(h uint32) (chainhash.Hash, bool) {
	first := firstCheckpoint(c.StartHeight)
	if uint64(h) < first || h%spCheckpointInterval != 0 {
		return chainhash.Hash{}, false
	}
	i := (uint64(h) - first) / spCheckpointInterval
	if i >= uint64(len(c.Checkpoints)) {
		return chainhash.Hash{}, false
	}
	return c.Checkpoints[i], true
}

// parseSPCheckpoints reads a /sp/checkpoints body and checks that it holds
// exactly the checkpoints its heights call for.
func parseSPCheckpoints(body []byte) (*spCheckpoints, error) {
	if len(body) > spCheckpointsMax {
		return nil, fmt.Errorf("%w: checkpoints of %d bytes", errSPFormat, len(body))
	}
	var raw struct {
		StartHeight *uint32  `json:"start_height"`
		Height      *uint32  `json:"height"`
		BlockHash   string   `json:"block_hash"`
		Header      string   `json:"header"`
		Interval    int      `json:"interval"`
		Checkpoints []string `json:"checkpoints"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("%w: checkpoints: %v", errSPFormat, err)
	}
	if raw.StartHeight == nil || raw.Height == nil || *raw.Height < *raw.StartHeight || raw.Interval != spCheckpointInterval {
		return nil, fmt.Errorf("%w: checkpoints: heights or interval missing or out of order", errSPFormat)
	}
	c := &spCheckpoints{StartHeight: *raw.StartHeight, Height: *raw.Height}
	want := 0
	if first := firstCheckpoint(c.StartHeight); first <= uint64(c.Height) {
		want = int((uint64(c.Height)-first)/spCheckpointInterval) + 1
	}
	if len(raw.Checkpoints) != want {
		return nil, fmt.Errorf("%w: %d checkpoints from %d to %d, want %d", errSPFormat, len(raw.Checkpoints), c.StartHeight, c.Height, want)
	}
	var err error
	if c.BlockHash, err = parseDisplayedHash(raw.BlockHash); err != nil {
		return nil, err
	}
	if c.Header, err = parseDisplayedHash(raw.Header); err != nil {
		return nil, err
	}
	c.Checkpoints = make([]chainhash.Hash, want)
	for i, s := range raw.Checkpoints {
		if c.Checkpoints[i], err = parseDisplayedHash(s); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseDisplayedHash reads a hash displayed byte-reversed, exactly 64 hex
// digits.
func parseDisplayedHash(s string) (chainhash.Hash, error) {
	if len(s) != 2*chainhash.HashSize {
		return chainhash.Hash{}, fmt.Errorf("%w: hash %.70q is not 64 hex digits", errSPFormat, s)
	}
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("%w: hash %.70q: %v", errSPFormat, s, err)
	}
	return *h, nil
}
