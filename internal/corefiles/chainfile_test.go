package corefiles

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// A chain file gives back its records in order, in blk-file framing; a
// reader for another network refuses it.
func TestChainFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blocks.dat")
	w, err := CreateChainFile(path, wire.SimNet)
	if err != nil {
		t.Fatal(err)
	}
	records := [][]byte{{1, 2, 3}, bytes.Repeat([]byte{9}, 1000), {}}
	for _, r := range records {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	err = ReadChainFile(path, wire.SimNet, func(h int32, raw []byte) error {
		if int(h) != len(got) {
			t.Fatalf("height %d for record %d", h, len(got))
		}
		got = append(got, append([]byte{}, raw...))
		return nil
	})
	if err != nil || len(got) != len(records) || !bytes.Equal(got[1], records[1]) {
		t.Fatalf("read %d records: %v", len(got), err)
	}
	if err := ReadChainFile(path, wire.MainNet, func(int32, []byte) error { return nil }); err == nil {
		t.Fatal("a chain file of another network was read")
	}
}
