package corefixture

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

// Exchange is one recorded HTTP exchange (*.http.json).
type Exchange struct {
	Method, Path string
	RequestBody  string
	Status       int
	Header       [][2]string // response headers in recorded order
	Body         []byte
}

// LoadExchange reads a *.http.json file.
func LoadExchange(path string) (*Exchange, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec struct {
		Request struct {
			Method string  `json:"method"`
			Path   string  `json:"path"`
			Body   *string `json:"body"`
		} `json:"request"`
		Response struct {
			Status  int         `json:"status"`
			Headers [][2]string `json:"headers"`
			BodyHex string      `json:"body_hex"`
		} `json:"response"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	body, err := hex.DecodeString(rec.Response.BodyHex)
	if err != nil {
		return nil, fmt.Errorf("%s: body_hex: %w", path, err)
	}
	ex := &Exchange{
		Method: rec.Request.Method, Path: rec.Request.Path,
		Status: rec.Response.Status, Header: rec.Response.Headers, Body: body,
	}
	if rec.Request.Body != nil {
		ex.RequestBody = *rec.Request.Body
	}
	return ex, nil
}

// Handler answers every request with the recorded response, byte for byte
// (status, headers except Date and Content-Length, body).
func (ex *Exchange) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range ex.Header {
			switch http.CanonicalHeaderKey(h[0]) {
			case "Date", "Content-Length":
				continue
			}
			w.Header().Add(h[0], h[1])
		}
		w.WriteHeader(ex.Status)
		_, _ = w.Write(ex.Body)
	})
}
