package btcdtest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/btcsuite/btcd/wire/v2"
)

// A block file holds a chain's blocks in height order, genesis first, each
// as a record of the network magic (4 bytes, little-endian), the block's
// size (4 bytes, little-endian) and the serialized block: the framing of
// Bitcoin Core's blk*.dat files, without their obfuscation and not split
// into 128 MiB files. Tools that write the same chain in Core's format
// (the blocks-dir writer) or replay it read it with ReadBlockFile.

// maxBlockRecord bounds a record's declared size: a serialized block is at
// most 4,000,000 bytes (its weight bounds it).
const maxBlockRecord = maxBlockWeight

// BlockFileWriter appends block records to a file.
type BlockFileWriter struct {
	f   *os.File
	w   *bufio.Writer
	net wire.BitcoinNet
}

// CreateBlockFile creates (or truncates) the block file at path for the
// network with magic net.
func CreateBlockFile(path string, net wire.BitcoinNet) (*BlockFileWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("block file: %w", err)
	}
	return &BlockFileWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), net: net}, nil
}

// Append writes one block record.
func (b *BlockFileWriter) Append(raw []byte) error {
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(b.net))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(raw)))
	if _, err := b.w.Write(hdr[:]); err != nil {
		return fmt.Errorf("block file: %w", err)
	}
	if _, err := b.w.Write(raw); err != nil {
		return fmt.Errorf("block file: %w", err)
	}
	return nil
}

// Close flushes, syncs and closes the file.
func (b *BlockFileWriter) Close() error {
	err := b.w.Flush()
	if err == nil {
		err = b.f.Sync()
	}
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("block file: %w", err)
	}
	return nil
}

// ReadBlockFile calls fn with every block of the block file at path, in
// order, with its height (0 for the first). raw is valid only during the
// call. A record with another magic or a size over 4,000,000 bytes, or a
// file ending inside a record, is an error.
func ReadBlockFile(path string, net wire.BitcoinNet, fn func(height int32, raw []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("block file: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var buf []byte
	for height := int32(0); ; height++ {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("block file %s: record %d: %w", path, height, err)
		}
		if got := wire.BitcoinNet(binary.LittleEndian.Uint32(hdr[:4])); got != net {
			return fmt.Errorf("block file %s: record %d has magic %v, want %v", path, height, got, net)
		}
		size := binary.LittleEndian.Uint32(hdr[4:])
		if size > maxBlockRecord {
			return fmt.Errorf("block file %s: record %d declares %d bytes", path, height, size)
		}
		if cap(buf) < int(size) {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("block file %s: record %d: %w", path, height, err)
		}
		if err := fn(height, buf); err != nil {
			return err
		}
	}
}
