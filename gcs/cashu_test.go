package gcs

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/spaolacci/murmur3"
)

type cashuHashToRange struct {
	Item     string `json:"item"`
	F        uint64 `json:"f"`
	Expected uint64 `json:"expected"`
}

type cashuVariant struct {
	HashToRange     cashuHashToRange `json:"hash_to_range"`
	Items           []string         `json:"items"`
	ExpectedContent string           `json:"expected_content_b64"`
	NonMembers      []string         `json:"non_members"`
	MurmurHello     []string         `json:"murmur3_x64_128_hello"`
}

type cashuVectors struct {
	NUT25 cashuVariant `json:"nut25_two_round_murmur3_x86_32"`
	NUT23 cashuVariant `json:"nut23_murmur3_x64_128_low64"`
}

func loadCashuVectors(tb testing.TB) cashuVectors {
	tb.Helper()
	raw, err := os.ReadFile("../testdata/cashu/vectors.json")
	if err != nil {
		tb.Fatal(err)
	}
	var v cashuVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatal(err)
	}
	if len(v.NUT25.Items) == 0 || len(v.NUT23.Items) == 0 {
		tb.Fatal("cashu vectors: missing items")
	}
	return v
}

func mustHexList(tb testing.TB, in []string) [][]byte {
	tb.Helper()
	out := make([][]byte, len(in))
	for i, s := range in {
		b, err := hex.DecodeString(s)
		if err != nil {
			tb.Fatalf("hex %q: %v", s, err)
		}
		out[i] = b
	}
	return out
}

// The NUT-23 hash is the first 64-bit word murmur3 returns; the vector for
// "hello" pins which half that is.
func TestCashuNUT23MurmurHalf(t *testing.T) {
	v := loadCashuVectors(t)
	h1, h2 := murmur3.Sum128([]byte("hello"))
	got := []string{fmt.Sprintf("%016x", h1), fmt.Sprintf("%016x", h2)}
	if got[0] != v.NUT23.MurmurHello[0] || got[1] != v.NUT23.MurmurHello[1] {
		t.Fatalf("murmur3_x64_128(hello) = %v, vectors say %v", got, v.NUT23.MurmurHello)
	}
	if (CashuNUT23Hasher{}).Hash64([]byte("hello")) != h1 {
		t.Fatal("NUT-23 hasher does not return the low (first) word")
	}
}

// Both Cashu variants reproduce the published range value and filter bytes,
// match every member and reject the listed non-members.
func TestCashuVectors(t *testing.T) {
	v := loadCashuVectors(t)
	for _, tc := range []struct {
		name string
		vec  cashuVariant
		h    Hasher
	}{
		{"nut25", v.NUT25, CashuNUT25Hasher{}},
		{"nut23", v.NUT23, CashuNUT23Hasher{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item, err := hex.DecodeString(tc.vec.HashToRange.Item)
			if err != nil {
				t.Fatal(err)
			}
			if got := HashToRange(tc.h.Hash64(item), tc.vec.HashToRange.F); got != tc.vec.HashToRange.Expected {
				t.Fatalf("hash_to_range = %d, want %d", got, tc.vec.HashToRange.Expected)
			}
			items := mustHexList(t, tc.vec.Items)
			f, err := Build(CashuParams, tc.h, items)
			if err != nil {
				t.Fatal(err)
			}
			if got := base64.StdEncoding.EncodeToString(f.Bytes()); got != tc.vec.ExpectedContent {
				t.Fatalf("content = %s, want %s", got, tc.vec.ExpectedContent)
			}
			want, err := base64.StdEncoding.DecodeString(tc.vec.ExpectedContent)
			if err != nil {
				t.Fatal(err)
			}
			// Decode the published bytes with N carried beside them.
			g, err := NewFilter(uint32(len(items)), CashuParams, want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(g.Bytes(), want) {
				t.Fatal("re-encoding differs")
			}
			for _, fl := range []*Filter{f, g} {
				for i, it := range items {
					ok, err := fl.Match(tc.h, it)
					if err != nil || !ok {
						t.Fatalf("member %d: match=%v err=%v", i, ok, err)
					}
				}
				ok, err := fl.MatchAny(tc.h, items[3:5])
				if err != nil || !ok {
					t.Fatalf("MatchAny(members) = %v, %v", ok, err)
				}
				non := mustHexList(t, tc.vec.NonMembers)
				for i, it := range non {
					ok, err := fl.Match(tc.h, it)
					if err != nil || ok {
						t.Fatalf("non-member %d: match=%v err=%v", i, ok, err)
					}
				}
				if len(non) > 0 {
					ok, err := fl.MatchAny(tc.h, non)
					if err != nil || ok {
						t.Fatalf("MatchAny(non-members) = %v, %v", ok, err)
					}
				}
			}
		})
	}
}
