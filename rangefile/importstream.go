package rangefile

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// ErrImportChanged is returned by an ImportStream whose bytes are not
// those of the SHA-256 it was told to expect, though each state held the
// same block at its end (the store's bytes changed under it: a repair).
var ErrImportChanged = errors.New("rangefile: the import file's bytes differ from the first pass")

// ImportStream reads a neutrino import file (the bytes BuildImport
// returns) of heights 0..end without holding it: the metadata prefix,
// then Size heights at a time, each run read from its own committed state
// through a ReadFunc, so that no state is held while a reader of the
// stream is slow (an upload). Each state must hold the block the stream
// was made for at end; since a block fixes every header and filter header
// below it, two streams made for the same end block read the same bytes,
// whatever the tip did between them. A stream holds one run (Size
// records) at a time.
type ImportStream struct {
	read    ReadFunc
	net     wire.BitcoinNet
	filters bool
	end     uint32
	endHash chainhash.Hash

	next    uint64 // the next height to read
	started bool   // the metadata prefix is in buf
	prev    chainhash.Hash
	buf     []byte
	off     int

	// want, when set, is the SHA-256 the whole stream must have: the last
	// bytes are not returned unless it does.
	want    *[32]byte
	sum     hashState
	written int64
	// err is the first error, returned by every Read after it.
	err error
}

// hashState is the running SHA-256 of a verifying stream.
type hashState interface {
	io.Writer
	Sum(b []byte) []byte
}

// NewImportStream returns a stream of the import file of heights 0..end
// (headers, or filter headers when filters) of the chain whose block at
// end is endHash.
func NewImportStream(read ReadFunc, net wire.BitcoinNet, filters bool, end uint32, endHash chainhash.Hash) *ImportStream {
	return &ImportStream{read: read, net: net, filters: filters, end: end, endHash: endHash}
}

// ImportName returns the layout name of the import file of headers, or
// of filter headers when filters.
func ImportName(filters bool) string {
	if filters {
		return FilterHeadersImportName
	}
	return HeadersImportName
}

// ImportSize returns the size in bytes of the import file of heights
// 0..end.
func ImportSize(filters bool, end uint32) int64 {
	rec := int64(BlockHeaderSize)
	if filters {
		rec = FilterHeaderSize
	}
	return NeutrinoMetadataSize + rec*(int64(end)+1)
}

// Size returns the stream's length in bytes.
func (s *ImportStream) Size() int64 { return ImportSize(s.filters, s.end) }

// Verify makes the stream check that its bytes hash to sum: the read
// that would return the last bytes returns ErrImportChanged instead when
// they do not, so an upload of the stream fails rather than completes
// with other bytes. Call it before the first Read.
func (s *ImportStream) Verify(sum [32]byte) {
	s.want = &sum
	s.sum = sha256.New()
}

// Read implements io.Reader.
func (s *ImportStream) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.off == len(s.buf) {
		if err := s.fill(); err != nil {
			s.err = err
			return 0, err
		}
	}
	n := copy(p, s.buf[s.off:])
	s.off += n
	return n, nil
}

// fill reads the next run into buf (the metadata prefix with the first
// one); io.EOF after the last.
func (s *ImportStream) fill() error {
	if s.next > uint64(s.end) {
		return io.EOF
	}
	s.buf, s.off = s.buf[:0], 0
	if !s.started {
		typ := byte(NeutrinoBlockType)
		if s.filters {
			typ = NeutrinoFilterType
		}
		s.buf = append(s.buf, NeutrinoMetadata(s.net, typ, 0)...)
		s.started = true
	}
	a := s.next
	b := uint32(min(a+Size-1, uint64(s.end)))
	err := s.read(func(r Reader) error {
		h, err := r.HashAt(s.end)
		if err != nil {
			return fmt.Errorf("hash at %d: %w", s.end, err)
		}
		if h != s.endHash {
			return fmt.Errorf("import file of heights 0..%d: block %s at %d, made for %s: %w", s.end, h, s.end, s.endHash, ErrChainChanged)
		}
		s.buf, err = appendImportRun(s.buf, r, s.filters, uint32(a), b, &s.prev)
		return err
	})
	if err != nil {
		return err
	}
	s.next = uint64(b) + 1
	if s.want != nil {
		_, _ = s.sum.Write(s.buf)
		s.written += int64(len(s.buf))
		if s.next > uint64(s.end) {
			var got [32]byte
			s.sum.Sum(got[:0])
			if got != *s.want || s.written != s.Size() {
				s.buf = s.buf[:0]
				return fmt.Errorf("%s: sha256 %x, want %x: %w", ImportName(s.filters), got, *s.want, ErrImportChanged)
			}
		}
	}
	return nil
}

// appendImportRun appends the records of heights a..b to dst: headers,
// checked to link to *prev (the hash of the header at a-1, when a > 0),
// which it sets to the last one's hash; or filter headers.
func appendImportRun(dst []byte, r Reader, filters bool, a, b uint32, prev *chainhash.Hash) ([]byte, error) {
	if filters {
		fhs, err := r.FilterHeadersByHeight(a, b)
		if err != nil {
			return dst, fmt.Errorf("filter headers %d..%d: %w", a, b, err)
		}
		if len(fhs) != int(b-a)+1 {
			return dst, fmt.Errorf("filter headers %d..%d: %d of them: %w", a, b, len(fhs), ErrShortRead)
		}
		return AppendFilterHeaders(dst, fhs), nil
	}
	hs, err := r.Headers(a, b)
	if err != nil {
		return dst, fmt.Errorf("headers %d..%d: %w", a, b, err)
	}
	if len(hs) != int(b-a)+1 {
		return dst, fmt.Errorf("headers %d..%d: %d of them: %w", a, b, len(hs), ErrShortRead)
	}
	if a > 0 && hs[0].PrevBlock != *prev {
		return dst, fmt.Errorf("headers at %d: %w", a, ErrChainChanged)
	}
	if dst, err = AppendHeaders(dst, hs); err != nil {
		return dst, err
	}
	*prev = hs[len(hs)-1].BlockHash()
	return dst, nil
}

// HashImport returns the import file of heights 0..end as an Object
// without Data: its name and SHA-256, from one streaming pass.
func HashImport(read ReadFunc, net wire.BitcoinNet, filters bool, end uint32, endHash chainhash.Hash) (Object, error) {
	h := sha256.New()
	if _, err := io.Copy(h, NewImportStream(read, net, filters, end, endHash)); err != nil {
		return Object{}, err
	}
	o := Object{Name: ImportName(filters)}
	h.Sum(o.SHA256[:0])
	return o, nil
}

// writeImportRuns writes the records of heights 0..end read from one
// state r, a run at a time, after the metadata prefix.
func writeImportRuns(w io.Writer, r Reader, net wire.BitcoinNet, filters bool, end uint32) error {
	typ := byte(NeutrinoBlockType)
	if filters {
		typ = NeutrinoFilterType
	}
	if _, err := w.Write(NeutrinoMetadata(net, typ, 0)); err != nil {
		return err
	}
	var (
		prev chainhash.Hash
		buf  []byte
		err  error
	)
	for a := uint64(0); a <= uint64(end); a += Size {
		b := uint32(min(a+Size-1, uint64(end)))
		if buf, err = appendImportRun(buf[:0], r, filters, uint32(a), b, &prev); err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

var _ io.Reader = (*ImportStream)(nil)
