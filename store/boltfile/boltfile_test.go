package boltfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// writeFile creates a bbolt file with a few buckets, one of them big enough
// to need pages of its own, and returns its bytes.
func writeFile(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"small", "big"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			n := 3
			if name == "big" {
				n = 2000
			}
			for i := range n {
				if err := b.Put([]byte{byte(i >> 8), byte(i)}, bytes.Repeat([]byte{byte(i)}, 40)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheck(t *testing.T) {
	good := writeFile(t)
	m, err := PickMeta(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	if m.PageSize != uint64(os.Getpagesize()) || m.PGID*m.PageSize > uint64(len(good)) || m.Root < 2 || m.Root >= m.PGID {
		t.Fatalf("PickMeta = %+v for a file of %d bytes", m, len(good))
	}
	ps := m.PageSize
	damaged := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	zero := func(off, n uint64) []byte {
		return damaged(func(b []byte) []byte { clear(b[off : off+n]); return b })
	}
	tests := []struct {
		name string
		file []byte
		want string // in the error; "" for a file that must pass
	}{
		{"whole", good, ""},
		{"meta page 0 zeroed", zero(0, ps), ""},
		{"meta page 1 zeroed", zero(ps, ps), ""},
		{"empty", nil, "the file is empty"},
		{"truncated to three pages", good[:3*ps], "shorter than 4 pages"},
		{"truncated one page short", good[:(m.PGID-1)*ps], "truncated?"},
		{"both meta pages zeroed", zero(0, 2*ps), "no valid meta page"},
		{"root page zeroed", zero(m.Root*ps, ps), "root page"},
		{"freelist page zeroed", zero(m.Freelist*ps, ps), "freelist page"},
		{"root typed as a meta page", damaged(func(b []byte) []byte { b[m.Root*ps+8] = MetaPage; return b }), "not leaf or branch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(bytes.NewReader(tc.file), int64(len(tc.file)))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var ce *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check: %v; want ErrCorrupt saying %q", err, tc.want)
			}
		})
	}
}

func TestCorruptError(t *testing.T) {
	err := readError(io.ErrUnexpectedEOF, "root page %d", 7)
	if got, want := err.Error(), "bbolt file is corrupt: root page 7: unexpected EOF"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%v: want it to match ErrCorrupt and io.ErrUnexpectedEOF", err)
	}
}
