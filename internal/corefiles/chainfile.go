package corefiles

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/btcsuite/btcd/wire/v2"
)

// A chain file holds a chain's blocks in height order, genesis first, each
// in the record framing of Core's blk files (appendRecordHeader), without
// their obfuscation and not split into files of MaxBlockFileSize: a chain
// kept to be written in Core's layout later (by a Writer) or replayed.

// maxBlockRecord bounds a record's declared size: a serialized block is at
// most its weight limit, wire.MaxBlockPayload.
const maxBlockRecord = wire.MaxBlockPayload

// ChainFileWriter appends block records to a chain file.
type ChainFileWriter struct {
	f     *os.File
	w     *bufio.Writer
	magic [4]byte
	hdr   [8]byte
}

// CreateChainFile creates (or truncates) the chain file at path for the
// network with magic net.
func CreateChainFile(path string, net wire.BitcoinNet) (*ChainFileWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("block file: %w", err)
	}
	w := &ChainFileWriter{f: f, w: bufio.NewWriterSize(f, 1<<20)}
	binary.LittleEndian.PutUint32(w.magic[:], uint32(net))
	return w, nil
}

// Append writes one block record.
func (b *ChainFileWriter) Append(raw []byte) error {
	if _, err := b.w.Write(appendRecordHeader(b.hdr[:0], b.magic, len(raw))); err != nil {
		return fmt.Errorf("block file: %w", err)
	}
	if _, err := b.w.Write(raw); err != nil {
		return fmt.Errorf("block file: %w", err)
	}
	return nil
}

// Close flushes, syncs and closes the file.
func (b *ChainFileWriter) Close() error {
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

// ReadChainFile calls fn with every block of the chain file at path, in
// order, with its height (0 for the first). raw is valid only during the
// call. A record with another magic or a size over wire.MaxBlockPayload, or a
// file ending inside a record, is an error.
func ReadChainFile(path string, net wire.BitcoinNet, fn func(height int32, raw []byte) error) error {
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

// appendRecordHeader appends the header of a blk or rev file record, the
// network magic and the payload's size (little-endian), to dst.
func appendRecordHeader(dst []byte, magic [4]byte, size int) []byte {
	dst = append(dst, magic[:]...)
	return binary.LittleEndian.AppendUint32(dst, uint32(size))
}
