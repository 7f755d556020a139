package spfilter

import (
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Server builds the answers of FilterType from a View: complete P2P v1
// frames, no wire.Message. Its methods are functions of the request and
// the view, safe for concurrent use; they allocate the frames they return
// and what the view returns, nothing in proportion to what a request
// declares.
type Server struct {
	view View
	net  wire.BitcoinNet
}

// New returns a server of view's index for the network net.
func New(view View, net wire.BitcoinNet) *Server {
	return &Server{view: view, net: net}
}

// Covers reports whether the index covers every height start..end (start
// ≤ end): a request that reaches outside is ignored.
func (s *Server) Covers(start, end uint32) bool {
	first, next := s.view.Range()
	return start >= first && start <= end && end < next
}

// AppendCFilters appends to dst the cfilter frames of the blocks hashes[0],
// hashes[1], … at heights start, start+1, …: until the frames appended
// reach chunkBytes or hashes ends, at least one. n is the blocks framed.
// A height the index no longer holds as hashes[i] (a reorg overtook the
// answer) fails with ErrNotFound; on error dst is returned unchanged.
func (s *Server) AppendCFilters(dst []byte, start uint32, hashes []chainhash.Hash, chunkBytes int) (out []byte, n int, err error) {
	at := len(dst)
	for n = 0; n < len(hashes) && (n == 0 || len(dst)-at < chunkBytes); n++ {
		h := start + uint32(n)
		b, err := s.view.Block(h)
		if err != nil {
			return dst[:at], 0, fmt.Errorf("silent-payment data at %d: %w", h, err)
		}
		if b.BlockHash != hashes[n] {
			return dst[:at], 0, fmt.Errorf("%w: height %d is block %s in the index, the answer's is %s", ErrNotFound, h, b.BlockHash, hashes[n])
		}
		dataLen := DataLen(len(b.TweakData), len(b.Filter))
		if dataLen > MaxDataSize {
			return dst[:at], 0, fmt.Errorf("silent-payment data of block %s at %d is %d bytes, over %d", b.BlockHash, h, dataLen, MaxDataSize)
		}
		payloadLen := 1 + chainhash.HashSize + wirescan.CompactSizeLen(uint64(dataLen)) + dataLen
		if n == 0 {
			// Room for the chunk as this block's frame predicts it, so
			// that it seldom grows (and never far past its answer).
			frame := wireframe.HeaderSize + payloadLen
			dst = slices.Grow(dst, min(frame*len(hashes), max(chunkBytes, 0)+frame))
		}
		grown, err := appendFrame(dst, s.net, wire.CmdCFilter, payloadLen, func(p []byte) []byte {
			p = append(p, byte(FilterType))
			p = append(p, b.BlockHash[:]...)
			p = wirescan.AppendCompactSize(p, uint64(dataLen))
			return AppendData(p, b.TweakData, b.Filter)
		})
		if err != nil {
			return dst[:at], 0, err
		}
		dst = grown
	}
	return dst, n, nil
}

// CFHeaders returns the cfheaders frame for the blocks at heights
// start..stopHeight, stop the last: the commitment header before start
// (zero at the index's first height) and each block's commitment hash.
// ErrNotFound when the index does not hold them as the chain ending at
// stop.
func (s *Server) CFHeaders(start, stopHeight uint32, stop chainhash.Hash) ([]byte, error) {
	if stopHeight < start || stopHeight-start >= MaxGetCFHeaders {
		return nil, fmt.Errorf("cfheaders %d..%d: over %d blocks", start, stopHeight, MaxGetCFHeaders)
	}
	count := int(stopHeight-start) + 1
	entries, err := s.view.Headers(start, stopHeight)
	if err != nil {
		return nil, fmt.Errorf("commitment headers %d..%d: %w", start, stopHeight, err)
	}
	if len(entries) != count || entries[0].Height != start {
		return nil, fmt.Errorf("commitment headers %d..%d: view returned %d entries", start, stopHeight, len(entries))
	}
	if entries[count-1].BlockHash != stop {
		return nil, fmt.Errorf("%w: height %d is block %s in the index, not the stop %s", ErrNotFound, stopHeight, entries[count-1].BlockHash, stop)
	}
	var prev chainhash.Hash
	if first, _ := s.view.Range(); start > first {
		before, err := s.view.Headers(start-1, start-1)
		if err != nil {
			return nil, fmt.Errorf("commitment header at %d: %w", start-1, err)
		}
		if len(before) != 1 {
			return nil, fmt.Errorf("commitment header at %d: view returned %d entries", start-1, len(before))
		}
		prev = before[0].Header
	}
	// The two reads are two snapshots: the first entry must chain onto
	// the header before it, or a reorg came between them.
	if ChainHeader(entries[0].Commitment, prev) != entries[0].Header {
		return nil, fmt.Errorf("%w: commitment header at %d does not chain onto the one before (a reorg between reads)", ErrNotFound, start)
	}
	payloadLen := 1 + 2*chainhash.HashSize + wirescan.CompactSizeLen(uint64(count)) + count*chainhash.HashSize
	return appendFrame(nil, s.net, wire.CmdCFHeaders, payloadLen, func(p []byte) []byte {
		p = append(p, byte(FilterType))
		p = append(p, stop[:]...)
		p = append(p, prev[:]...)
		p = wirescan.AppendCompactSize(p, uint64(count))
		for i := range entries {
			p = append(p, entries[i].Commitment[:]...)
		}
		return p
	})
}

// CFCheckpt returns the cfcheckpt frame up to stop, at stopHeight: the
// commitment headers at every multiple of CheckpointInterval up to
// stopHeight, zero below the index's first height. ErrNotFound when the
// index does not cover stop on the active chain.
func (s *Server) CFCheckpt(stopHeight uint32, stop chainhash.Hash) ([]byte, error) {
	entries, err := s.view.Checkpoints(stop)
	if err != nil {
		return nil, fmt.Errorf("commitment checkpoints to %s: %w", stop, err)
	}
	count := int(stopHeight / CheckpointInterval)
	if len(entries) > count {
		return nil, fmt.Errorf("commitment checkpoints to %s at %d: view returned %d, at most %d", stop, stopHeight, len(entries), count)
	}
	zeros := count - len(entries)
	for i := range entries {
		if want := uint32(zeros+i+1) * CheckpointInterval; entries[i].Height != want {
			return nil, fmt.Errorf("commitment checkpoints to %s: entry %d at height %d, want %d", stop, i, entries[i].Height, want)
		}
	}
	payloadLen := 1 + chainhash.HashSize + wirescan.CompactSizeLen(uint64(count)) + count*chainhash.HashSize
	return appendFrame(nil, s.net, wire.CmdCFCheckpt, payloadLen, func(p []byte) []byte {
		p = append(p, byte(FilterType))
		p = append(p, stop[:]...)
		p = wirescan.AppendCompactSize(p, uint64(count))
		var zero chainhash.Hash
		for range zeros {
			p = append(p, zero[:]...)
		}
		for i := range entries {
			p = append(p, entries[i].Header[:]...)
		}
		return p
	})
}

// appendFrame appends to dst the frame of command whose payload of
// payloadLen bytes put appends to the empty slice it is given (with room
// for exactly that), then fills in the header and its checksum. A payload
// of another length is an error (dst is returned unchanged).
func appendFrame(dst []byte, net wire.BitcoinNet, command string, payloadLen int, put func(p []byte) []byte) ([]byte, error) {
	at := len(dst)
	grown := slices.Grow(dst, wireframe.HeaderSize+payloadLen)[:at+wireframe.HeaderSize]
	payload := put(grown[len(grown):])
	if len(payload) != payloadLen || cap(grown) < len(grown)+payloadLen {
		return dst, fmt.Errorf("%s payload is %d bytes, computed %d", command, len(payload), payloadLen)
	}
	grown = grown[:len(grown)+payloadLen]
	wireframe.PutHeader(grown[at:], net, command, payloadLen, wireframe.PayloadChecksum(grown[at+wireframe.HeaderSize:]))
	return grown, nil
}
