package corerest

import (
	"encoding/hex"
	"io"
	"net/http"
	"strconv"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// A Core-compatible answer is written from its raw bytes as the client
// reads it: the hex and JSON forms are encoded in small pieces on the way
// out rather than built whole first, so that a handler whose client reads
// slowly holds only the raw bytes (at most a 256 KiB filter, or 2,000
// headers: 160 KB), not two or three copies of them (MemoryBound).

// hexPiece is how many raw bytes are hex-encoded at a time.
const hexPiece = 2 << 10

// jsonBody is the .json form of an answer: its length and how to write it.
type jsonBody interface {
	size() int
	writeTo(w io.Writer) error
}

// jsonText is a small JSON answer held as text.
type jsonText string

func (j jsonText) size() int                 { return len(j) }
func (j jsonText) writeTo(w io.Writer) error { _, err := io.WriteString(w, string(j)); return err }

// jsonHexField is {"<name>":"<hex of raw>"}.
type jsonHexField struct {
	name string
	raw  []byte
}

func (j jsonHexField) size() int { return len(`{"":""}`) + len(j.name) + hex.EncodedLen(len(j.raw)) }

func (j jsonHexField) writeTo(w io.Writer) error {
	if _, err := io.WriteString(w, `{"`+j.name+`":"`); err != nil {
		return err
	}
	if err := writeHex(w, j.raw); err != nil {
		return err
	}
	_, err := io.WriteString(w, `"}`)
	return err
}

// jsonHashArray is a JSON array of the display-order hex of the 32-byte
// hashes in raw (internal order).
type jsonHashArray []byte

func (j jsonHashArray) count() int { return len(j) / chainhash.HashSize }

func (j jsonHashArray) size() int {
	n := j.count()
	if n == 0 {
		return 2
	}
	return 2 + n*(2+2*chainhash.HashSize) + n - 1
}

func (j jsonHashArray) writeTo(w io.Writer) error {
	var buf [4 + 2*chainhash.HashSize]byte
	for i := range j.count() {
		b := buf[:0]
		if i == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ',')
		}
		// Display order (chainhash.Hash.String) is the bytes reversed.
		var rev [chainhash.HashSize]byte
		for k, c := range j[i*chainhash.HashSize : (i+1)*chainhash.HashSize] {
			rev[chainhash.HashSize-1-k] = c
		}
		b = append(b, '"')
		b = hex.AppendEncode(b, rev[:])
		b = append(b, '"')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if j.count() == 0 {
		_, err := io.WriteString(w, "[")
		if err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]")
	return err
}

// writeHex writes the lower-case hex of raw, hexPiece bytes at a time.
func writeHex(w io.Writer, raw []byte) error {
	var buf [2 * hexPiece]byte
	for len(raw) > 0 {
		n := min(len(raw), hexPiece)
		hex.Encode(buf[:], raw[:n])
		if _, err := w.Write(buf[:2*n]); err != nil {
			return err
		}
		raw = raw[n:]
	}
	return nil
}

// writeCoreBody sends a 200 in format f: the raw bytes (parts, back to
// back), their lower-case hex plus a newline, or js plus a newline.
func writeCoreBody(w http.ResponseWriter, f restFormat, parts [][]byte, js jsonBody) {
	rawLen := 0
	for _, p := range parts {
		rawLen += len(p)
	}
	var size int
	switch f {
	case formatBin:
		w.Header().Set("Content-Type", ctBinary)
		size = rawLen
	case formatHex:
		w.Header().Set("Content-Type", ctText)
		size = hex.EncodedLen(rawLen) + 1
	case formatJSON:
		w.Header().Set("Content-Type", ctJSON)
		size = js.size() + 1
	}
	w.Header().Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	switch f {
	case formatBin:
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return
			}
		}
	case formatHex:
		for _, p := range parts {
			if writeHex(w, p) != nil {
				return
			}
		}
		_, _ = io.WriteString(w, "\n")
	case formatJSON:
		if js.writeTo(w) == nil {
			_, _ = io.WriteString(w, "\n")
		}
	}
}
