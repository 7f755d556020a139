package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

func TestParseSPRecordsRefusesMalformedFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    []byte
		records int // -1: refused
	}{
		{"empty file", nil, 0},
		{"two records", []byte{0x01, 0x00, 0x02, 0xaa, 0xbb}, 2},
		{"empty record", []byte{0x00}, 1},
		{"truncated record", []byte{0x03, 0xaa}, -1},
		{"truncated length", []byte{0xfd, 0x01}, -1},
		{"non-shortest length", []byte{0xfd, 0x01, 0x00, 0xaa}, -1},
		{"record above the limit", append([]byte{0xfd, 0x01, 0x01}, make([]byte, 257)...), -1},
		{"too many records", bytes.Repeat([]byte{0x00}, 4), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := parseSPRecords(tc.body, 256, 3)
			if tc.records < 0 {
				if !errors.Is(err, errSPFormat) {
					t.Fatalf("records %d, error %v: want errSPFormat", len(recs), err)
				}
				return
			}
			if err != nil || len(recs) != tc.records {
				t.Fatalf("%d records, error %v; want %d", len(recs), err, tc.records)
			}
		})
	}
}

func TestParseSPHeadersRefusesPartialRecords(t *testing.T) {
	rec := make([]byte, spHeaderRecord)
	for i := range rec {
		rec[i] = byte(i)
	}
	for _, tc := range []struct {
		name string
		body []byte
		n    int // -1: refused
	}{
		{"none", nil, 0},
		{"one", rec, 1},
		{"one and a byte", append(bytes.Clone(rec), 0), -1},
		{"more than a file", make([]byte, spHeadersFileMax+spHeaderRecord), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, err := parseSPHeaders(tc.body)
			if tc.n < 0 {
				if !errors.Is(err, errSPFormat) {
					t.Fatalf("error %v, want errSPFormat", err)
				}
				return
			}
			if err != nil || len(hs) != tc.n {
				t.Fatalf("%d headers, error %v", len(hs), err)
			}
			if tc.n == 1 && (hs[0].BlockHash[0] != 0 || hs[0].Header[0] != 32 || hs[0].TweakHash[0] != 64 || hs[0].FilterHash[31] != 127) {
				t.Fatalf("fields in the wrong places: %+v", hs[0])
			}
		})
	}
}

func TestParseSPCheckpointsHoldsTheCountToTheHeights(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"none below 1,000", `{"start_height":1,"height":999,"block_hash":"` + h + `","header":"` + h + `","interval":1000,"checkpoints":[]}`, true},
		{"one at 1,000", `{"start_height":1,"height":1000,"block_hash":"` + h + `","header":"` + h + `","interval":1000,"checkpoints":["` + h + `"]}`, true},
		{"mainnet's first at 710,000", `{"start_height":709632,"height":711000,"block_hash":"` + h + `","header":"` + h + `","interval":1000,"checkpoints":["` + h + `","` + h + `"]}`, true},
		{"one missing", `{"start_height":1,"height":2000,"block_hash":"` + h + `","header":"` + h + `","interval":1000,"checkpoints":["` + h + `"]}`, false},
		{"one too many", `{"start_height":1,"height":10,"block_hash":"` + h + `","header":"` + h + `","interval":1000,"checkpoints":["` + h + `"]}`, false},
		{"height below start", `{"start_height":5,"height":4,"block_hash":"` + h + `","header":"` + h + `","interval":1000,"checkpoints":[]}`, false},
		{"no heights", `{"block_hash":"` + h + `","header":"` + h + `","interval":1000,"checkpoints":[]}`, false},
		{"other interval", `{"start_height":1,"height":10,"block_hash":"` + h + `","header":"` + h + `","interval":100,"checkpoints":[]}`, false},
		{"short hash", `{"start_height":1,"height":10,"block_hash":"ab","header":"` + h + `","interval":1000,"checkpoints":[]}`, false},
		{"not hex", `{"start_height":1,"height":10,"block_hash":"` + strings.Repeat("zz", 32) + `","header":"` + h + `","interval":1000,"checkpoints":[]}`, false},
		{"not JSON", `{`, false},
		{"too large", `{"x":"` + strings.Repeat("a", spCheckpointsMax) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseSPCheckpoints([]byte(tc.body))
			if tc.ok != (err == nil) {
				t.Fatalf("error %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, errSPFormat) {
				t.Fatalf("error %v does not wrap errSPFormat", err)
			}
			if tc.ok {
				if _, at := c.at(c.StartHeight - c.StartHeight%1000 + 1000); at != (len(c.Checkpoints) > 0) {
					t.Fatalf("checkpoint lookup disagrees with %d checkpoints", len(c.Checkpoints))
				}
			}
		})
	}
}

// FuzzSPFiles: the decoders of what a tweak server sends never panic,
// allocate no more than their input calls for, and what they accept
// re-encodes to the same bytes.
func FuzzSPFiles(f *testing.F) {
	f.Add([]byte{0x01, 0x00, 0x02, 0xaa, 0xbb})
	f.Add(make([]byte, spHeaderRecord))
	f.Add([]byte(`{"start_height":1,"height":1000,"block_hash":"` + strings.Repeat("ab", 32) + `","header":"` + strings.Repeat("cd", 32) + `","interval":1000,"checkpoints":["` + strings.Repeat("ef", 32) + `"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if recs, err := parseSPRecords(body, spMaxRecord, spFileHeights); err == nil {
			var again []byte
			for _, r := range recs {
				again = append(appendCompactSize(again, len(r)), r...)
			}
			if !bytes.Equal(again, body) {
				t.Fatalf("records re-encode to %x, read from %x", again, body)
			}
		}
		if hs, err := parseSPHeaders(body); err == nil {
			var again []byte
			for _, h := range hs {
				again = append(append(append(append(again, h.BlockHash[:]...), h.Header[:]...), h.TweakHash[:]...), h.FilterHash[:]...)
			}
			if !bytes.Equal(again, body) {
				t.Fatal("header records do not re-encode")
			}
		}
		if c, err := parseSPCheckpoints(body); err == nil {
			if len(c.Checkpoints) > len(body)/64 || c.Height < c.StartHeight {
				t.Fatalf("%d checkpoints from %d bytes, heights %d..%d", len(c.Checkpoints), len(body), c.StartHeight, c.Height)
			}
		}
	})
}

func appendCompactSize(dst []byte, n int) []byte {
	var b bytes.Buffer
	_ = wire.WriteVarInt(&b, 0, uint64(n))
	return append(dst, b.Bytes()...)
}

// TestSPFlagsNeverEchoTheScanKey: every refused --scan-key, and every other
// refused flag given beside a valid key, is refused without the key's
// digits in the message.
func TestSPFlagsNeverEchoTheScanKey(t *testing.T) {
	key := strings.Repeat("5a", 32)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("7b", 31)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spend := "02" + strings.Repeat("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", 1)
	ok := []string{"--spend-pub=" + spend, "--server=http://127.0.0.1:1", "--peer=127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"key too short", append([]string{"--scan-key=" + key[:62]}, ok...), exitUsage, "64 hex digits"},
		{"key not hex", append([]string{"--scan-key=" + key[:62] + "zz"}, ok...), exitUsage, "64 hex digits"},
		{"key zero", append([]string{"--scan-key=" + strings.Repeat("00", 32)}, ok...), exitUsage, "not a valid private key"},
		{"key file short", append([]string{"--scan-key=@" + keyFile}, ok...), exitUsage, "64 hex digits"},
		{"key file missing", append([]string{"--scan-key=@" + keyFile + ".nope"}, ok...), exitUsage, "no such file"},
		{"no key", ok, exitUsage, "--scan-key"},
		{"bad spend key", []string{"--scan-key=" + key, "--spend-pub=02ab", "--server=http://127.0.0.1:1", "--peer=127.0.0.1:1"}, exitUsage, "--spend-pub"},
		{"no server", []string{"--scan-key=" + key, "--spend-pub=" + spend, "--peer=127.0.0.1:1"}, exitUsage, "--server"},
		{"no block source", []string{"--scan-key=" + key, "--spend-pub=" + spend, "--server=http://127.0.0.1:1"}, exitUsage, "--peer"},
		{"two block sources", append([]string{"--scan-key=" + key, "--rest=http://127.0.0.1:1"}, ok...), exitUsage, "--peer"},
		{"bad label", append([]string{"--scan-key=" + key, "--label=-1"}, ok...), exitUsage, "label"},
		{"bad range", append([]string{"--scan-key=" + key, "--from=9", "--to=3"}, ok...), exitUsage, "bad range"},
		{"server not a URL", []string{"--scan-key=" + key, "--spend-pub=" + spend, "--server=ftp://x", "--peer=127.0.0.1:1"}, exitError, "--server"},
		{"server down", append([]string{"--scan-key=" + key}, ok...), exitError, "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errOut bytes.Buffer
			code := run(context.Background(), append([]string{"sp"}, tc.args...), io.Discard, &errOut)
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d with %q", code, errOut.String(), tc.code, tc.want)
			}
			for _, secret := range []string{key[:40], strings.Repeat("7b", 20)} {
				if strings.Contains(errOut.String(), secret) {
					t.Fatalf("stderr %q repeats the scan key", errOut.String())
				}
			}
		})
	}
}
