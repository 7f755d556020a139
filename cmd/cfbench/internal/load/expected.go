package load

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// Expected holds every byte a correct server sends for the chain
// the serve benchmark runs on, built once from btcd's own filters
// (getcfilter over RPC) before any load: each block's cfilter frame as
// wire encodes it, the filter hashes and filter headers cfheaders answers
// carry, and the message checksum of each cfheaders answer a load peer can
// ask for. The load peers compare what they receive against it byte for
// byte (memcmp), which checks more than decoding would (every checksum
// included) and costs the load generator almost no CPU. Read-only once
// built, shared by all peers.
type Expected struct {
	net wire.BitcoinNet
	// Hashes are the chain's block hashes by height.
	Hashes []chainhash.Hash
	// frames holds the cfilter frames of heights 0..tip back to back;
	// height h's is frames[frameAt[h]:frameAt[h+1]].
	frames  []byte
	frameAt []int
	// filterHashes holds dSHA256 of each filter, 32 bytes per height.
	filterHashes []byte
	// FilterHeaders are the BIP-157 filter headers by height.
	FilterHeaders []chainhash.Hash
	// cfheadersSums are the checksums of the cfheaders answers of
	// headersPerRequest blocks, by first height (every range a load peer
	// asks for).
	cfheadersSums map[uint32][4]byte
}

// checksumAt is where a v1 header's checksum starts: the bytes before it
// are the magic, the command and the payload length.
const checksumAt = wire.MessageHeaderSize - 4

// fetchWorkers bounds the RPC requests for filters in flight.
const fetchWorkers = 8

// BuildExpected fetches every filter of the chain whose block hashes are
// hashes from the node and builds the expected answers, checking the
// filter-header chain it computes against the node's header at the tip.
func BuildExpected(ctx context.Context, node *btcdtest.Node, params *chaincfg.Params, hashes []chainhash.Hash) (*Expected, error) {
	filters := make([][]byte, len(hashes))
	errs := make([]error, len(hashes))
	next := make(chan int)
	var wg sync.WaitGroup
	for range fetchWorkers {
		wg.Go(func() {
			for h := range next {
				filters[h], errs[h] = node.CFilter(ctx, hashes[h])
			}
		})
	}
	for h := range hashes {
		next <- h
	}
	close(next)
	wg.Wait()
	for h, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("btcd getcfilter at height %d: %w", h, err)
		}
	}
	tipHeader, err := node.CFilterHeader(ctx, hashes[len(hashes)-1])
	if err != nil {
		return nil, fmt.Errorf("btcd getcfilterheader of the tip: %w", err)
	}
	return NewExpected(params.Net, hashes, filters, tipHeader)
}

// NewExpected builds the expected answers from the chain's block
// hashes and filters; tipHeader is the filter header the node reports for
// the last block, which the computed chain must reach.
func NewExpected(net wire.BitcoinNet, hashes []chainhash.Hash, filters [][]byte, tipHeader chainhash.Hash) (*Expected, error) {
	e := &Expected{
		net:           net,
		Hashes:        hashes,
		frameAt:       make([]int, len(hashes)+1),
		filterHashes:  make([]byte, 0, len(hashes)*chainhash.HashSize),
		FilterHeaders: make([]chainhash.Hash, len(hashes)),
		cfheadersSums: make(map[uint32][4]byte),
	}
	var frames bytes.Buffer
	var prev chainhash.Hash
	for h, f := range filters {
		e.frameAt[h] = frames.Len()
		if err := wire.WriteMessage(&frames, wire.NewMsgCFilter(wire.GCSFilterRegular, &hashes[h], f), wire.ProtocolVersion, net); err != nil {
			return nil, fmt.Errorf("encode the cfilter of height %d: %w", h, err)
		}
		fh := headers.FilterHash(f)
		e.filterHashes = append(e.filterHashes, fh[:]...)
		prev = headers.FilterHeaderFromHash(fh, prev)
		e.FilterHeaders[h] = prev
	}
	e.frameAt[len(hashes)] = frames.Len()
	e.frames = frames.Bytes()
	if prev != tipHeader {
		return nil, fmt.Errorf("filter headers computed from btcd's filters reach %s at the tip, btcd says %s", prev, tipHeader)
	}
	tip := uint32(len(hashes) - 1)
	for first := uint32(0); first == 0 || first+headersPerRequest <= tip+1; first++ {
		stop := min(first+headersPerRequest-1, tip)
		payload := e.cfheadersPayload(first, stop)
		sum := chainhash.DoubleHashB(payload)
		e.cfheadersSums[first] = [4]byte(sum[:4])
	}
	return e, nil
}

// cfilterFrame is height h's cfilter frame.
func (e *Expected) CFilterFrame(h uint32) []byte {
	return e.frames[e.frameAt[h]:e.frameAt[h+1]]
}

// prevFilterHeader is the filter header before height first (zero for 0).
func (e *Expected) prevFilterHeader(first uint32) chainhash.Hash {
	if first == 0 {
		return chainhash.Hash{}
	}
	return e.FilterHeaders[first-1]
}

// cfheadersPayload is the payload of the cfheaders answer for first..Stop,
// built for the checksums.
func (e *Expected) cfheadersPayload(first, stop uint32) []byte {
	msg := wire.NewMsgCFHeaders()
	msg.FilterType = wire.GCSFilterRegular
	msg.StopHash = e.Hashes[stop]
	msg.PrevFilterHeader = e.prevFilterHeader(first)
	for h := first; h <= stop; h++ {
		fh := chainhash.Hash(e.filterHashes[h*chainhash.HashSize:])
		msg.FilterHashes = append(msg.FilterHashes, &fh)
	}
	var buf bytes.Buffer
	_ = msg.BtcEncode(&buf, wire.ProtocolVersion, wire.BaseEncoding)
	return buf.Bytes()
}

// checkCFilter compares a cfilter frame (header and payload) received for
// height h with the expected one; the header's checksum only when sums
// (over v2 the header is made up from the message and has none: the
// payload and the first 20 header bytes, magic, command and length, are
// compared).
func (e *Expected) checkCFilter(h uint32, hdr, payload []byte, sums bool) error {
	want := e.CFilterFrame(h)
	hdrLen := wire.MessageHeaderSize
	if !sums {
		hdrLen = checksumAt
	}
	if bytes.Equal(hdr[:hdrLen], want[:hdrLen]) && bytes.Equal(payload, want[wire.MessageHeaderSize:]) {
		return nil
	}
	if len(payload) >= 1+chainhash.HashSize {
		if got := chainhash.Hash(payload[1 : 1+chainhash.HashSize]); got != e.Hashes[h] {
			return fmt.Errorf("cfilter for block %s, want %s (height %d)", got, e.Hashes[h], h)
		}
	}
	return fmt.Errorf("cfilter of height %d (%d bytes, checksum %x) differs from the frame of btcd's filter (%d bytes, checksum %x)",
		h, len(payload), hdr[20:24], len(want)-wire.MessageHeaderSize, want[20:24])
}

// checkCFHeaders compares a cfheaders frame received for first..Stop with
// the expected one: length, checksum, filter type, stop hash, previous
// filter header, count and every filter hash; the checksum only when sums
// (see checkCFilter).
func (e *Expected) checkCFHeaders(first, stop uint32, hdr, payload []byte, sums bool) error {
	count := int(stop-first) + 1
	const fixed = 1 + 2*chainhash.HashSize
	varLen := wire.VarIntSerializeSize(uint64(count))
	if len(payload) != fixed+varLen+count*chainhash.HashSize {
		return fmt.Errorf("cfheaders for %d..%d of %d bytes, want %d", first, stop, len(payload), fixed+varLen+count*chainhash.HashSize)
	}
	if got := chainhash.Hash(payload[1 : 1+chainhash.HashSize]); payload[0] != byte(wire.GCSFilterRegular) || got != e.Hashes[stop] {
		return fmt.Errorf("cfheaders of type %d for stop %s, want 0 and %s", payload[0], got, e.Hashes[stop])
	}
	prev := e.prevFilterHeader(first)
	if !bytes.Equal(payload[1+chainhash.HashSize:fixed], prev[:]) {
		return fmt.Errorf("cfheaders for %d..%d: previous filter header differs from btcd's", first, stop)
	}
	var countBytes [9]byte
	if !bytes.Equal(payload[fixed:fixed+varLen], wirescan.AppendCompactSize(countBytes[:0], uint64(count))) {
		return fmt.Errorf("cfheaders for %d..%d: count is not %d", first, stop, count)
	}
	if !bytes.Equal(payload[fixed+varLen:], e.filterHashes[first*chainhash.HashSize:(stop+1)*chainhash.HashSize]) {
		return fmt.Errorf("cfheaders for %d..%d: filter hashes differ from btcd's filters'", first, stop)
	}
	if !sums {
		return nil
	}
	if sum, ok := e.cfheadersSums[first]; ok && stop == min(first+headersPerRequest-1, uint32(len(e.Hashes)-1)) {
		if !bytes.Equal(hdr[20:24], sum[:]) {
			return fmt.Errorf("cfheaders for %d..%d: checksum %x, want %x", first, stop, hdr[20:24], sum)
		}
		return nil
	}
	// A range of another size: hash it.
	if sum := chainhash.DoubleHashB(payload); !bytes.Equal(hdr[20:24], sum[:4]) {
		return fmt.Errorf("cfheaders for %d..%d: checksum %x, want %x", first, stop, hdr[20:24], sum[:4])
	}
	return nil
}

// meanFilterSize is the mean size of the filters (with their length
// prefix) of heights from..tip: a cfilter frame is the 24-byte header,
// the filter type and the block hash, then that.
func (e *Expected) MeanFilterSize(from uint32) float64 {
	n := len(e.Hashes) - int(from)
	if n <= 0 {
		return 0
	}
	return float64(e.frameAt[len(e.Hashes)]-e.frameAt[from]-n*(24+1+32)) / float64(n)
}
