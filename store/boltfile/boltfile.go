package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
)

// bbolt's on-disk format (version 2), as far as Check reads it. Every
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
	// PageHeaderSize is the size of the header every page starts with.
	PageHeaderSize = 16
	// ElementSize is the size of a branch or leaf element; a page's
	// elements follow its header.
	ElementSize = 16

	// BranchPage, LeafPage and MetaPage are page types: the flags field of
	// a page header.
	BranchPage = 0x01
	LeafPage   = 0x02
	MetaPage   = 0x04
)

const (
	magic        = 0xED0CDAED
	version      = 2
	bucketHeader = 16
	noFreelist   = ^uint64(0)
	freelistPage = 0x10
	bucketLeaf   = 0x01

	// metaEnd is where a meta page's checksum ends: the page header, four
	// uint32s, five uint64s (root, sequence, freelist, pgid, txid), then
	// the checksum.
	metaEnd = PageHeaderSize + 4*4 + 5*8 + 8

	// minPageSize and maxPageSize bound the page sizes bbolt can open
	// (it looks for the second meta page from 1 KiB to 16 MiB).
	minPageSize = 1 << 10
	maxPageSize = 1 << 24
	// initPages is the size, in pages, of a freshly created bbolt file
	// (two meta pages, the freelist and the empty root leaf); every valid
	// file is at least that long.
	initPages = 4
)

// ErrCorrupt is what every error Check and PickMeta return wraps.
var ErrCorrupt = errors.New("bbolt file is corrupt")

// CorruptError says what is wrong with a damaged file. errors.Is matches it
// to ErrCorrupt; it unwraps to the read error behind it, if any.
type CorruptError struct {
	Detail string // what is wrong, e.g. "root page 9 outside pages 2..7"
	Err    error  // the read error that found it, or nil
}

func (e *CorruptError) Error() string {
	s := ErrCorrupt.Error() + ": " + e.Detail
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptError) Unwrap() error { return e.Err }

// corrupt returns a CorruptError with the formatted detail.
func corrupt(format string, a ...any) error {
	return &CorruptError{Detail: fmt.Sprintf(format, a...)}
}

// readError returns a CorruptError for err, a failed read of what the
// formatted detail names.
func readError(err error, format string, a ...any) error {
	return &CorruptError{Detail: fmt.Sprintf(format, a...), Err: err}
}

// Meta is a decoded meta page.
type Meta struct {
	PageSize uint64
	Root     uint64 // the root bucket's page
	Freelist uint64 // the freelist's page, or all ones if none is stored
	PGID     uint64 // high-water mark: pages 0..PGID-1 are in use
	TxID     uint64
}

// decodeMeta decodes the meta page in b (at least metaEnd bytes) and checks
// it the way bbolt does before using it: magic, version and checksum.
func decodeMeta(b []byte) (Meta, error) {
	ne := binary.NativeEndian
	body := b[PageHeaderSize:]
	if ne.Uint32(body[0:]) != magic {
		return Meta{}, errors.New("bad magic")
	}
	if v := ne.Uint32(body[4:]); v != version {
		return Meta{}, fmt.Errorf("bbolt format version %d, want %d", v, version)
	}
	h := fnv.New64a()
	_, _ = h.Write(b[PageHeaderSize : metaEnd-8])
	if h.Sum64() != ne.Uint64(b[metaEnd-8:]) {
		return Meta{}, errors.New("bad checksum")
	}
	return Meta{
		PageSize: uint64(ne.Uint32(body[8:])),
		Root:     ne.Uint64(body[16:]),
		Freelist: ne.Uint64(body[32:]),
		PGID:     ne.Uint64(body[40:]),
		TxID:     ne.Uint64(body[48:]),
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

// Check checks the bbolt file r, size bytes long, before bbolt maps it: it
// must be at least four pages long, hold at least one valid meta page
// (magic, version, checksum, a page size bbolt can use), and the meta page
// bbolt will use (see PickMeta) must describe a file that is really there:
// its high-water page within the file, its root and freelist pages inside
// that, the freelist page a freelist listing only pages in use, the root
// bucket's page a leaf or branch page, and every top-level bucket's root
// page a leaf or branch page of its own id. A truncated file, a
// zero-filled one or one with a damaged meta or root page fails with a
// *CorruptError; bbolt would crash on it.
//
// It reads two meta pages, the freelist and a handful of page headers: a
// few preads, whatever the file's size.
func Check(r io.ReaderAt, size int64) error {
	meta, err := PickMeta(r, size)
	if err != nil {
		return err
	}
	c := fileChecker{r: r, size: uint64(size), pageSize: meta.PageSize, pgid: meta.PGID}
	if c.size < initPages*c.pageSize {
		return corrupt("%d bytes is shorter than %d pages of %d bytes", size, initPages, c.pageSize)
	}
	if meta.PGID < initPages || meta.PGID > c.size/c.pageSize {
		return corrupt("the meta page counts %d pages of %d bytes but the file holds %d bytes (truncated?)", meta.PGID, c.pageSize, size)
	}
	if meta.Root < 2 || meta.Root >= meta.PGID {
		return corrupt("root page %d outside pages 2..%d", meta.Root, meta.PGID-1)
	}
	if meta.Freelist != noFreelist {
		if err := c.checkFreelist(meta.Freelist); err != nil {
			return err
		}
	}
	return c.checkRootBucket(meta.Root)
}

// PickMeta returns the meta page bbolt will use in the file r, size bytes
// long; its PageSize is the file's. bbolt takes the page size from meta
// page 0 when it is valid, else from the first valid meta page it finds at
// 1 KiB, 2 KiB, ... 16 MiB; it then uses, of the two meta pages, the valid
// one with the higher transaction id (page 0 on a tie). A meta page is
// valid to bbolt when its magic, version and checksum are right; PickMeta
// also wants the page size it records to be the file's. It fails with a
// *CorruptError when there is no such page.
func PickMeta(r io.ReaderAt, size int64) (Meta, error) {
	if size <= 0 {
		return Meta{}, corrupt("the file is empty")
	}
	usize := uint64(size)
	buf := make([]byte, metaEnd)
	read := func(off uint64) (Meta, error) {
		if off+metaEnd > usize {
			return Meta{}, errors.New("past the end of the file")
		}
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			return Meta{}, err
		}
		return decodeMeta(buf)
	}
	var (
		pageSize uint64
		m1       Meta
		err1     error
	)
	m0, err0 := read(0)
	if err0 == nil {
		pageSize = m0.PageSize
		if !validPageSize(pageSize) {
			return Meta{}, corrupt("meta page 0 records page size %d", pageSize)
		}
		m1, err1 = read(pageSize)
	} else {
		err1 = errors.New("not found at any page size")
		for ps := uint64(minPageSize); ps <= maxPageSize && ps+metaEnd <= usize; ps <<= 1 {
			if m, err := read(ps); err == nil && m.PageSize == ps {
				m1, err1, pageSize = m, nil, ps
				break
			}
		}
	}
	var chosen Meta
	switch {
	case err0 != nil && err1 != nil:
		return Meta{}, corrupt("no valid meta page (page 0: %v; page 1: %v)", err0, err1)
	case err0 != nil:
		chosen = m1
	case err1 != nil || m0.TxID >= m1.TxID:
		chosen = m0
	default:
		chosen = m1
	}
	if chosen.PageSize != pageSize {
		return Meta{}, corrupt("meta page of transaction %d records page size %d, the file's is %d", chosen.TxID, chosen.PageSize, pageSize)
	}
	return chosen, nil
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
		return 0, 0, 0, corrupt("%s page %d outside pages 2..%d", what, id, c.pgid-1)
	}
	var h [PageHeaderSize]byte
	if _, err := c.r.ReadAt(h[:], int64(id*c.pageSize)); err != nil {
		return 0, 0, 0, readError(err, "%s page %d", what, id)
	}
	ne := binary.NativeEndian
	if got := ne.Uint64(h[0:]); got != id {
		return 0, 0, 0, corrupt("%s page %d names itself %d", what, id, got)
	}
	flags, count, overflow = ne.Uint16(h[8:]), ne.Uint16(h[10:]), ne.Uint32(h[12:])
	if id+uint64(overflow) >= c.pgid {
		return 0, 0, 0, corrupt("%s page %d overflows %d pages past the last page %d", what, id, overflow, c.pgid-1)
	}
	return flags, count, overflow, nil
}

// page reads page id with its overflow pages.
func (c *fileChecker) page(id uint64, overflow uint32) ([]byte, error) {
	buf := make([]byte, (uint64(overflow)+1)*c.pageSize)
	if _, err := c.r.ReadAt(buf, int64(id*c.pageSize)); err != nil {
		return nil, readError(err, "page %d", id)
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
	if flags != freelistPage {
		return corrupt("freelist page %d has type %#x", id, flags)
	}
	p, err := c.page(id, overflow)
	if err != nil {
		return err
	}
	body := p[PageHeaderSize:]
	n, skip := uint64(count), uint64(0)
	if count == 0xFFFF { // bbolt stores a larger count as the first element
		if len(body) < 8 {
			return corrupt("freelist page %d too short for its count", id)
		}
		n, skip = binary.NativeEndian.Uint64(body), 1
	}
	if n > uint64(len(body))/8-skip {
		return corrupt("freelist page %d lists %d pages, more than it holds", id, n)
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = binary.NativeEndian.Uint64(body[(skip+uint64(i))*8:])
	}
	slices.Sort(ids)
	for i, free := range ids {
		if free < 2 || free >= c.pgid {
			return corrupt("freelist lists page %d outside pages 2..%d", free, c.pgid-1)
		}
		if i > 0 && ids[i-1] == free {
			return corrupt("freelist lists page %d twice", free)
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
	if flags != LeafPage && flags != BranchPage {
		return corrupt("%s page %d has type %#x, not leaf or branch", what, id, flags)
	}
	if uint64(count)*ElementSize > uint64(len(p)-PageHeaderSize) {
		return corrupt("%s page %d claims %d elements, more than it holds", what, id, count)
	}
	ne := binary.NativeEndian
	for i := range uint64(count) {
		at := PageHeaderSize + i*ElementSize
		e := p[at : at+ElementSize]
		if flags == BranchPage {
			pos, ksize, child := uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:])), ne.Uint64(e[8:])
			if at+pos+ksize > uint64(len(p)) || ksize == 0 {
				return corrupt("%s page %d: element %d lies outside the page", what, id, i)
			}
			cflags, _, _, err := c.pageHeader(child, what+" child")
			if err != nil {
				return err
			}
			if cflags != LeafPage && cflags != BranchPage {
				return corrupt("%s child page %d has type %#x", what, child, cflags)
			}
			continue
		}
		eflags, pos, ksize, vsize := ne.Uint32(e[0:]), uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		if at+pos+ksize+vsize > uint64(len(p)) || ksize == 0 {
			return corrupt("%s page %d: element %d lies outside the page", what, id, i)
		}
		if !buckets || eflags&bucketLeaf == 0 {
			continue
		}
		name := string(p[at+pos : at+pos+ksize])
		v := p[at+pos+ksize : at+pos+ksize+vsize]
		if len(v) < bucketHeader {
			return corrupt("bucket %q: value of %d bytes", name, len(v))
		}
		broot := ne.Uint64(v)
		if broot == 0 { // inline bucket: its page follows the header
			inline := v[bucketHeader:]
			if len(inline) < PageHeaderSize {
				return corrupt("bucket %q: inline page of %d bytes", name, len(inline))
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
		if bflags != LeafPage && bflags != BranchPage {
			return corrupt("bucket %q: root page %d has type %#x", name, broot, bflags)
		}
	}
	return nil
}
