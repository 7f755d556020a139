package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
)

// bbolt's on-disk format (version 2), as far as checkFile reads it. Every
// page starts with a 16-byte header: page id (uint64), flags (uint16),
// element count (uint16), overflow page count (uint32). A meta page's body
// is magic, version, page size, flags (uint32 each), the root bucket (root
// page id, sequence: uint64 each), the freelist page id, the high-water
// page id, the transaction id and an FNV-64a checksum of the bytes before
// it (uint64 each). Integers are in the host's byte order, as bbolt writes
// them. Branch elements are 16 bytes (key offset, key size: uint32; child
// page id: uint64), leaf elements 16 bytes (flags, value offset, key size,
// value size: uint32); offsets count from the element itself. A bucket's
// value starts with its root page id and sequence; root 0 means the
// bucket's page is stored inline right after them.
const (
	boltMagic          = 0xED0CDAED
	boltVersion        = 2
	boltPageHeaderSize = 16
	boltElementSize    = 16
	boltBucketHeader   = 16
	boltNoFreelist     = ^uint64(0)

	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltMetaPage     = 0x04
	boltFreelistPage = 0x10
	boltBucketLeaf   = 0x01

	// metaEnd is where a meta page's checksum ends: the page header, four
	// uint32s, five uint64s (root, sequence, freelist, pgid, txid), then
	// the checksum.
	metaEnd = boltPageHeaderSize + 4*4 + 5*8 + 8

	// minPageSize and maxPageSize bound the page sizes bbolt can open
	// (it looks for the second meta page from 1 KiB to 16 MiB).
	minPageSize = 1 << 10
	maxPageSize = 1 << 24
	// boltInitPages is the size, in pages, of a freshly created bbolt file
	// (two meta pages, the freelist and the empty root leaf); every valid
	// file is at least that long.
	boltInitPages = 4
)

// boltMeta is a decoded meta page.
type boltMeta struct {
	pageSize uint64
	root     uint64
	freelist uint64
	pgid     uint64 // high-water mark: pages 0..pgid-1 are in use
	txid     uint64
}

// decodeMeta decodes the meta page in b (at least metaEnd bytes) and checks
// it the way bbolt does before using it: magic, version and checksum.
func decodeMeta(b []byte) (boltMeta, error) {
	ne := binary.NativeEndian
	body := b[boltPageHeaderSize:]
	if ne.Uint32(body[0:]) != boltMagic {
		return boltMeta{}, errors.New("bad magic")
	}
	if v := ne.Uint32(body[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("bbolt format version %d, want %d", v, boltVersion)
	}
	h := fnv.New64a()
	_, _ = h.Write(b[boltPageHeaderSize : metaEnd-8])
	if h.Sum64() != ne.Uint64(b[metaEnd-8:]) {
		return boltMeta{}, errors.New("bad checksum")
	}
	return boltMeta{
		pageSize: uint64(ne.Uint32(body[8:])),
		root:     ne.Uint64(body[16:]),
		freelist: ne.Uint64(body[32:]),
		pgid:     ne.Uint64(body[40:]),
		txid:     ne.Uint64(body[48:]),
	}, nil
}

// fileChecker reads pages of a bbolt file with pread, never through a
// memory mapping, so a page past the end of the file is an error rather
// than SIGBUS.
type fileChecker struct {
	r        io.ReaderAt
	size     uint64
	pageSize uint64
	pgid     uint64
}

// checkFile checks a bbolt file before bbolt maps it: it must be at least
// four pages long, hold at least one valid meta page (magic, version,
// checksum, a page size bbolt can use), and the meta page bbolt will use
// (the valid one with the higher transaction id) must describe a file that
// is really there: its high-water page within the file, its root and
// freelist pages inside that, the freelist page a freelist listing only
// pages in use, the root bucket's page a leaf or branch page, and every
// top-level bucket's root page a leaf or branch page of its own id. A
// truncated file, a zero-filled one or one with a damaged meta or root page
// fails here with an error wrapping ErrCorrupt; bbolt would crash on it.
//
// It reads two meta pages, the freelist and a handful of page headers: a
// few preads, whatever the file's size.
func checkFile(r io.ReaderAt, size int64) error {
	if size <= 0 {
		return fmt.Errorf("%w: the file is empty", ErrCorrupt)
	}
	meta, pageSize, err := pickMeta(r, uint64(size))
	if err != nil {
		return err
	}
	c := fileChecker{r: r, size: uint64(size), pageSize: pageSize, pgid: meta.pgid}
	if c.size < boltInitPages*c.pageSize {
		return fmt.Errorf("%w: %d bytes is shorter than %d pages of %d bytes", ErrCorrupt, size, boltInitPages, c.pageSize)
	}
	if meta.pgid < boltInitPages || meta.pgid > c.size/c.pageSize {
		return fmt.Errorf("%w: the meta page counts %d pages of %d bytes but the file holds %d bytes (truncated?)", ErrCorrupt, meta.pgid, c.pageSize, size)
	}
	if meta.root < 2 || meta.root >= meta.pgid {
		return fmt.Errorf("%w: root page %d outside pages 2..%d", ErrCorrupt, meta.root, meta.pgid-1)
	}
	if meta.freelist != boltNoFreelist {
		if err := c.checkFreelist(meta.freelist); err != nil {
			return err
		}
	}
	return c.checkRootBucket(meta.root)
}

// pickMeta returns the meta page bbolt will use and the file's page size.
// bbolt takes the page size from meta page 0 when it is valid, else from
// the first valid meta page it finds at 1 KiB, 2 KiB, ... 16 MiB; it then
// uses, of the two meta pages, the valid one with the higher transaction id
// (page 0 on a tie). A meta page is valid to bbolt when its magic, version
// and checksum are right; pickMeta also wants the page size it records to
// be the file's.
func pickMeta(r io.ReaderAt, size uint64) (boltMeta, uint64, error) {
	buf := make([]byte, metaEnd)
	read := func(off uint64) (boltMeta, error) {
		if off+metaEnd > size {
			return boltMeta{}, errors.New("past the end of the file")
		}
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			return boltMeta{}, err
		}
		return decodeMeta(buf)
	}
	var (
		pageSize uint64
		m1       boltMeta
		err1     error
	)
	m0, err0 := read(0)
	if err0 == nil {
		pageSize = m0.pageSize
		if !validPageSize(pageSize) {
			return boltMeta{}, 0, fmt.Errorf("%w: meta page 0 records page size %d", ErrCorrupt, pageSize)
		}
		m1, err1 = read(pageSize)
	} else {
		err1 = errors.New("not found at any page size")
		for ps := uint64(minPageSize); ps <= maxPageSize && ps+metaEnd <= size; ps <<= 1 {
			if m, err := read(ps); err == nil && m.pageSize == ps {
				m1, err1, pageSize = m, nil, ps
				break
			}
		}
	}
	var chosen boltMeta
	switch {
	case err0 != nil && err1 != nil:
		return boltMeta{}, 0, fmt.Errorf("%w: no valid meta page (page 0: %v; page 1: %v)", ErrCorrupt, err0, err1)
	case err0 != nil:
		chosen = m1
	case err1 != nil || m0.txid >= m1.txid:
		chosen = m0
	default:
		chosen = m1
	}
	if chosen.pageSize != pageSize {
		return boltMeta{}, 0, fmt.Errorf("%w: meta page of transaction %d records page size %d, the file's is %d", ErrCorrupt, chosen.txid, chosen.pageSize, pageSize)
	}
	return chosen, pageSize, nil
}

// validPageSize reports whether bbolt could have written pages of ps bytes.
func validPageSize(ps uint64) bool {
	return ps >= minPageSize && ps <= maxPageSize && ps&(ps-1) == 0
}

// pageHeader reads the header of page id: flags, element count and
// overflow, after checking that the page and its overflow lie below the
// high-water mark and that it names itself id.
func (c *fileChecker) pageHeader(id uint64, what string) (flags uint16, count uint16, overflow uint32, err error) {
	if id < 2 || id >= c.pgid {
		return 0, 0, 0, fmt.Errorf("%w: %s page %d outside pages 2..%d", ErrCorrupt, what, id, c.pgid-1)
	}
	var h [boltPageHeaderSize]byte
	if _, err := c.r.ReadAt(h[:], int64(id*c.pageSize)); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: %s page %d: %w", ErrCorrupt, what, id, err)
	}
	ne := binary.NativeEndian
	if got := ne.Uint64(h[0:]); got != id {
		return 0, 0, 0, fmt.Errorf("%w: %s page %d names itself %d", ErrCorrupt, what, id, got)
	}
	flags, count, overflow = ne.Uint16(h[8:]), ne.Uint16(h[10:]), ne.Uint32(h[12:])
	if id+uint64(overflow) >= c.pgid {
		return 0, 0, 0, fmt.Errorf("%w: %s page %d overflows %d pages past the last page %d", ErrCorrupt, what, id, overflow, c.pgid-1)
	}
	return flags, count, overflow, nil
}

// page reads page id with its overflow pages.
func (c *fileChecker) page(id uint64, overflow uint32) ([]byte, error) {
	buf := make([]byte, (uint64(overflow)+1)*c.pageSize)
	if _, err := c.r.ReadAt(buf, int64(id*c.pageSize)); err != nil {
		return nil, fmt.Errorf("%w: page %d: %w", ErrCorrupt, id, err)
	}
	return buf, nil
}

// checkFreelist checks the freelist page: its type, its count within the
// page, and every id it lists inside 2..pgid-1 with no repeats.
func (c *fileChecker) checkFreelist(id uint64) error {
	flags, count, overflow, err := c.pageHeader(id, "freelist")
	if err != nil {
		return err
	}
	if flags != boltFreelistPage {
		return fmt.Errorf("%w: freelist page %d has type %#x", ErrCorrupt, id, flags)
	}
	p, err := c.page(id, overflow)
	if err != nil {
		return err
	}
	body := p[boltPageHeaderSize:]
	n, skip := uint64(count), uint64(0)
	if count == 0xFFFF { // bbolt stores a larger count as the first element
		if len(body) < 8 {
			return fmt.Errorf("%w: freelist page %d too short for its count", ErrCorrupt, id)
		}
		n, skip = binary.NativeEndian.Uint64(body), 1
	}
	if n > uint64(len(body))/8-skip {
		return fmt.Errorf("%w: freelist page %d lists %d pages, more than it holds", ErrCorrupt, id, n)
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = binary.NativeEndian.Uint64(body[(skip+uint64(i))*8:])
	}
	slices.Sort(ids)
	for i, free := range ids {
		if free < 2 || free >= c.pgid {
			return fmt.Errorf("%w: freelist lists page %d outside pages 2..%d", ErrCorrupt, free, c.pgid-1)
		}
		if i > 0 && ids[i-1] == free {
			return fmt.Errorf("%w: freelist lists page %d twice", ErrCorrupt, free)
		}
	}
	return nil
}

// checkRootBucket checks the root bucket's page and, one level down, the
// root page of every top-level bucket (the store's six) or every child of a
// root branch page.
func (c *fileChecker) checkRootBucket(root uint64) error {
	flags, count, overflow, err := c.pageHeader(root, "root")
	if err != nil {
		return err
	}
	p, err := c.page(root, overflow)
	if err != nil {
		return err
	}
	return c.checkNode(p, root, flags, count, "root", true)
}

// checkNode checks the elements of a leaf or branch page p (page id, or 0
// for an inline bucket page): every element and key inside the page, every
// child page id a page of the right kind; with buckets set, every bucket
// value's root page too.
func (c *fileChecker) checkNode(p []byte, id uint64, flags, count uint16, what string, buckets bool) error {
	if flags != boltLeafPage && flags != boltBranchPage {
		return fmt.Errorf("%w: %s page %d has type %#x, not leaf or branch", ErrCorrupt, what, id, flags)
	}
	if uint64(count)*boltElementSize > uint64(len(p)-boltPageHeaderSize) {
		return fmt.Errorf("%w: %s page %d claims %d elements, more than it holds", ErrCorrupt, what, id, count)
	}
	ne := binary.NativeEndian
	for i := range uint64(count) {
		at := boltPageHeaderSize + i*boltElementSize
		e := p[at : at+boltElementSize]
		if flags == boltBranchPage {
			pos, ksize, child := uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:])), ne.Uint64(e[8:])
			if at+pos+ksize > uint64(len(p)) || ksize == 0 {
				return fmt.Errorf("%w: %s page %d: element %d lies outside the page", ErrCorrupt, what, id, i)
			}
			cflags, _, _, err := c.pageHeader(child, what+" child")
			if err != nil {
				return err
			}
			if cflags != boltLeafPage && cflags != boltBranchPage {
				return fmt.Errorf("%w: %s child page %d has type %#x", ErrCorrupt, what, child, cflags)
			}
			continue
		}
		eflags, pos, ksize, vsize := ne.Uint32(e[0:]), uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		if at+pos+ksize+vsize > uint64(len(p)) || ksize == 0 {
			return fmt.Errorf("%w: %s page %d: element %d lies outside the page", ErrCorrupt, what, id, i)
		}
		if !buckets || eflags&boltBucketLeaf == 0 {
			continue
		}
		name := string(p[at+pos : at+pos+ksize])
		v := p[at+pos+ksize : at+pos+ksize+vsize]
		if len(v) < boltBucketHeader {
			return fmt.Errorf("%w: bucket %q: value of %d bytes", ErrCorrupt, name, len(v))
		}
		broot := ne.Uint64(v)
		if broot == 0 { // inline bucket: its page follows the header
			inline := v[boltBucketHeader:]
			if len(inline) < boltPageHeaderSize {
				return fmt.Errorf("%w: bucket %q: inline page of %d bytes", ErrCorrupt, name, len(inline))
			}
			if err := c.checkNode(inline, 0, ne.Uint16(inline[8:]), ne.Uint16(inline[10:]), "bucket "+name, false); err != nil {
				return err
			}
			continue
		}
		bflags, _, _, err := c.pageHeader(broot, "bucket "+name+" root")
		if err != nil {
			return err
		}
		if bflags != boltLeafPage && bflags != boltBranchPage {
			return fmt.Errorf("%w: bucket %q: root page %d has type %#x", ErrCorrupt, name, broot, bflags)
		}
	}
	return nil
}

// fileSize returns f's size.
func fileSize(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
