package nodeclient

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The scanner recognises the envelopes Core and btcd send and refuses every
// other shape, which then takes the encoding/json path.
func TestScanHexReply(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		ok     bool
		hex    string
		id     uint64
		withID bool
	}{
		{name: "core", body: `{"result":"00ff","error":null,"id":7}` + "\n", ok: true, hex: "00ff", id: 7, withID: true},
		{name: "btcd", body: `{"jsonrpc":"1.0","result":"abCD","error":null,"id":12}`, ok: true, hex: "abCD", id: 12, withID: true},
		{name: "whitespace and order", body: " \t{ \"id\" : 0 ,\r\n\"error\":null , \"result\" : \"\" } ", ok: true, hex: "", id: 0, withID: true},
		{name: "no id, no error", body: `{"result":"01"}`, ok: true, hex: "01"},
		{name: "non-hex result is left to the hex decoder", body: `{"result":"zz","error":null,"id":1}`, ok: true, hex: "zz", id: 1, withID: true},
		{name: "error object", body: `{"result":null,"error":{"code":-5,"message":"Block not found"},"id":1}`},
		{name: "null result", body: `{"result":null,"error":null,"id":1}`},
		{name: "escaped result", body: `{"result":"\u0030\u0030","error":null,"id":1}`},
		{name: "duplicate result", body: `{"result":"00","result":"11","error":null,"id":1}`},
		{name: "case variant of a member", body: `{"Result":"00","error":null,"id":1}`},
		{name: "unknown member", body: `{"result":"00","error":null,"id":1,"x":1}`},
		{name: "string id", body: `{"result":"00","error":null,"id":"1"}`},
		{name: "negative id", body: `{"result":"00","error":null,"id":-1}`},
		{name: "fractional id", body: `{"result":"00","error":null,"id":1.0}`},
		{name: "leading zero id", body: `{"result":"00","error":null,"id":01}`},
		{name: "trailing garbage", body: `{"result":"00","error":null,"id":1}x`},
		{name: "nullx", body: `{"result":"00","error":nullx,"id":1}`},
		{name: "truncated", body: `{"result":"00","error":null,"id":1`},
		{name: "empty object", body: `{}`},
		{name: "trailing comma", body: `{"result":"00",}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, ok := scanHexReply([]byte(tt.body))
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if string(rep.hex) != tt.hex || rep.id != tt.id || rep.hasID != tt.withID {
				t.Errorf("got hex %q id %d/%v, want %q %d/%v", rep.hex, rep.id, rep.hasID, tt.hex, tt.id, tt.withID)
			}
		})
	}
}

func TestScanHexBatch(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
		n    int
	}{
		{name: "two", body: `[{"result":"00","error":null,"id":1},{"jsonrpc":"1.0","result":"11","error":null,"id":2}]`, ok: true, n: 2},
		{name: "empty", body: ` [ ] `, ok: true, n: 0},
		{name: "element without id", body: `[{"result":"00","error":null}]`},
		{name: "element with error", body: `[{"result":"00","error":null,"id":1},{"result":null,"error":{"code":-5,"message":"x"},"id":2}]`},
		{name: "single object", body: `{"result":"00","error":null,"id":1}`},
		{name: "trailing comma", body: `[{"result":"00","error":null,"id":1},]`},
		{name: "unterminated", body: `[{"result":"00","error":null,"id":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reps, ok := scanHexBatch([]byte(tt.body), nil)
			if ok != tt.ok || len(reps) != tt.n {
				t.Fatalf("ok %v n %d, want %v %d", ok, len(reps), tt.ok, tt.n)
			}
		})
	}
}

// checkAgainstJSON fails if the scanner accepted body as a reply that
// encoding/json reads differently: a different result (when the hex is
// valid), an error object, or a different id.
func checkAgainstJSON(t *testing.T, body []byte, rep hexReply) {
	t.Helper()
	var ref struct {
		Result *string          `json:"result"`
		Error  *json.RawMessage `json:"error"`
		ID     *uint64          `json:"id"`
	}
	err := json.Unmarshal(body, &ref)
	if _, herr := hex.DecodeString(string(rep.hex)); herr != nil {
		// The fast path reports a hex error; encoding/json must not
		// find valid hex either.
		if err == nil && ref.Result != nil {
			if _, herr2 := hex.DecodeString(*ref.Result); herr2 == nil && *ref.Result != "" {
				t.Fatalf("scanner: bad hex %q; encoding/json: valid %q", rep.hex, *ref.Result)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("scanner accepted %q; encoding/json: %v", body, err)
	}
	if ref.Result == nil || *ref.Result != string(rep.hex) {
		t.Fatalf("scanner result %q; encoding/json %v", rep.hex, ref.Result)
	}
	if ref.Error != nil && string(*ref.Error) != "null" {
		t.Fatalf("scanner saw no error; encoding/json error %s", *ref.Error)
	}
	if rep.hasID != (ref.ID != nil) || (ref.ID != nil && *ref.ID != rep.id) {
		t.Fatalf("scanner id %d/%v; encoding/json %v", rep.id, rep.hasID, ref.ID)
	}
}

// Whatever the scanner accepts, encoding/json reads the same way.
func FuzzScanHexReply(f *testing.F) {
	for _, s := range []string{
		`{"result":"00ff","error":null,"id":7}`,
		`{"jsonrpc":"1.0","result":"abCD","error":null,"id":12}`,
		`{"result":null,"error":{"code":-5,"message":"x"},"id":1}`,
		`{"result":"\u0030","error":null,"id":1}`,
		`{"result":"00","error":null,"id":1,"result":"11"}`,
		` {"id":18446744073709551615,"result":"00"} `,
		`[{"result":"00","error":null,"id":1},{"result":"11","error":null,"id":2}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if rep, ok := scanHexReply(body); ok {
			checkAgainstJSON(t, body, rep)
		}
		reps, ok := scanHexBatch(body, nil)
		if !ok {
			return
		}
		var ref []json.RawMessage
		if err := json.Unmarshal(body, &ref); err != nil {
			// Only a result the hex decoder rejects (a control
			// character, say) may make encoding/json refuse the
			// whole batch: both ways end in ErrMalformed.
			for _, rep := range reps {
				if _, herr := hex.DecodeString(string(rep.hex)); herr != nil {
					return
				}
			}
			t.Fatalf("scanner accepted batch %q; encoding/json: %v", body, err)
		}
		if len(ref) != len(reps) {
			t.Fatalf("scanner %d elements; encoding/json %d", len(reps), len(ref))
		}
		for i := range reps {
			checkAgainstJSON(t, ref[i], reps[i])
		}
	})
}

// A batch reply cut short yields the complete elements at its front, in
// id order, and nothing once an id is out of order.
func TestScanHexBatchPrefix(t *testing.T) {
	body := []byte(`[{"result":"aa","error":null,"id":7}, {"jsonrpc":"1.0","result":"bbbb","error":null,"id":8},{"result":"cc","error":null,"id":9}]`)
	for _, tc := range []struct {
		cut  int
		want []string
	}{
		{len(body), []string{"aa", "bbbb", "cc"}},
		{len(body) - 1, []string{"aa", "bbbb", "cc"}},
		{len(body) - 20, []string{"aa", "bbbb"}},
		{40, []string{"aa"}},
		{30, nil},
		{0, nil},
	} {
		reps := scanHexBatchPrefix(body[:tc.cut], 7, 3)
		var got []string
		for _, r := range reps {
			got = append(got, string(r.hex))
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("cut at %d: %v, want %v", tc.cut, got, tc.want)
		}
	}
	if reps := scanHexBatchPrefix(body, 8, 3); len(reps) != 0 {
		t.Errorf("ids from 8: %d elements, want none (7 comes first)", len(reps))
	}
	if reps := scanHexBatchPrefix(body, 7, 2); len(reps) != 2 {
		t.Errorf("at most 2: %d elements", len(reps))
	}
}

// BenchmarkScanHexBatch scans a batch reply of 16 one-megabyte block hexes
// in Core's envelope, the catch-up's hot reply.
func BenchmarkScanHexBatch(b *testing.B) {
	var body bytes.Buffer
	body.WriteByte('[')
	hexBlock := strings.Repeat("0123456789abcdef", 1<<17)
	for i := range 16 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"result":"%s","error":null,"id":%d}`, hexBlock, i+1)
	}
	body.WriteByte(']')
	doc := body.Bytes()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var reps []hexReply
	for b.Loop() {
		var ok bool
		if reps, ok = scanHexBatch(doc, reps); !ok || len(reps) != 16 {
			b.Fatal("not recognised")
		}
	}
}
