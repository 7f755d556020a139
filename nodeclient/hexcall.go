package nodeclient

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// replyBuffers recycles the buffers whole replies are read into and the
// buffers their hex is decoded into, so that a catch-up does not allocate
// (and the GC does not scan) two copies of every block it fetches.
type replyBuffers struct {
	pool sync.Pool // *[]byte
}

func (b *replyBuffers) get() *[]byte {
	if p, ok := b.pool.Get().(*[]byte); ok {
		return p
	}
	p := make([]byte, 0, 64<<10)
	return &p
}

func (b *replyBuffers) put(p *[]byte) {
	// Do not keep the buffer of one huge reply around for ever.
	if cap(*p) > 64<<20 {
		return
	}
	*p = (*p)[:0]
	b.pool.Put(p)
}

// readAll reads r to the end into *buf, growing it as needed.
func readAll(buf *[]byte, r io.Reader) error {
	*buf = (*buf)[:0]
	return readMore(buf, r)
}

// readMore reads r to the end onto what *buf holds already.
func readMore(buf *[]byte, r io.Reader) error {
	b := *buf
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			*buf = b
			return nil
		}
		if err != nil {
			*buf = b
			return err
		}
	}
}

// postHex sends one JSON-RPC request (a single call when batch is nil,
// otherwise the batch of n calls starting at id first) whose results are
// hex strings, and calls use with the decoded bytes of each successful
// result (index i in the batch, 0 for a single call). raw is valid only
// during the call. Failing elements are reported through fail. Replies in
// the shape Core and btcd send are scanned in place (hexreply.go); any
// other reply is decoded with encoding/json as Call and CallBatch do.
//
// With maxReply > 0 a batch reply is read only up to maxReply bytes when
// its first elements are complete and in order by then: those are used,
// *prefix is set to their number, and the rest of the batch is left
// unanswered (neither use nor fail; the connection is not reused). This
// bounds what a batch of blocks larger than expected holds in memory.
func (c *Client) postHex(ctx context.Context, what string, body []byte, method string, first uint64, n int, batch bool,
	maxReply int, prefix *int, use func(i int, raw []byte) error, fail func(i int, err error)) error {
	return c.post(ctx, what, body, func(status int, r io.Reader) error {
		reply := c.bufs.get()
		defer c.bufs.put(reply)
		if batch && maxReply > 0 && prefix != nil {
			if err := readAll(reply, io.LimitReader(r, int64(maxReply)+1)); err != nil {
				return fmt.Errorf("%w: %s: read reply: %v", ErrMalformed, what, err)
			}
			if len(*reply) > maxReply && status == http.StatusOK {
				if reps := scanHexBatchPrefix(*reply, first, n); len(reps) > 0 {
					for i, rep := range reps {
						if err := decodeHexInto(c, method, rep.hex, func(raw []byte) error { return use(i, raw) }); err != nil {
							fail(i, err)
						}
					}
					*prefix = len(reps)
					return nil
				}
			}
		}
		if err := readMore(reply, r); err != nil {
			// post reports the transport error it recorded.
			return fmt.Errorf("%w: %s: read reply: %v", ErrMalformed, what, err)
		}
		raw := c.bufs.get()
		defer c.bufs.put(raw)
		decodeHex := func(i int, digits []byte) error {
			if len(digits)%2 != 0 {
				return fmt.Errorf("%w: %s: hex: odd length %d", ErrMalformed, method, len(digits))
			}
			if cap(*raw) < len(digits)/2 {
				*raw = make([]byte, len(digits)/2)
			}
			b := (*raw)[:len(digits)/2]
			if _, err := hex.Decode(b, digits); err != nil {
				return fmt.Errorf("%w: %s: hex: %v", ErrMalformed, method, err)
			}
			return use(i, b)
		}

		if !batch {
			if rep, ok := scanHexReply(*reply); ok && status == http.StatusOK {
				return decodeHex(0, rep.hex)
			}
			var s string
			if err := decodeResponse(method, status, bytes.NewReader(*reply), &s); err != nil {
				return err
			}
			return decodeHex(0, []byte(s))
		}

		seen := make([]bool, n)
		if reps, ok := scanHexBatch(*reply, nil); ok {
			for _, rep := range reps {
				if rep.id < first || rep.id >= first+uint64(n) || seen[rep.id-first] {
					continue
				}
				i := int(rep.id - first)
				seen[i] = true
				if err := decodeHex(i, rep.hex); err != nil {
					fail(i, err)
				}
			}
		} else {
			var replies []batchResponse
			if err := json.NewDecoder(bytes.NewReader(*reply)).Decode(&replies); err != nil {
				return fmt.Errorf("%w: %s: decode reply (HTTP %d): %v", ErrMalformed, what, status, err)
			}
			for _, rep := range replies {
				if rep.ID < first || rep.ID >= first+uint64(n) || seen[rep.ID-first] {
					continue
				}
				i := int(rep.ID - first)
				seen[i] = true
				if rep.Error != nil {
					rep.Error.Method = method
					fail(i, rep.Error)
					continue
				}
				var s string
				if err := json.Unmarshal(rep.Result, &s); err != nil {
					fail(i, fmt.Errorf("%w: %s: decode result: %v", ErrMalformed, method, err))
					continue
				}
				if err := decodeHex(i, []byte(s)); err != nil {
					fail(i, err)
				}
			}
		}
		for i := range n {
			if !seen[i] {
				fail(i, fmt.Errorf("%w: %s: no reply in batch", ErrMalformed, method))
			}
		}
		return nil
	})
}

// decodeHexInto decodes hex digits of a reply into a pooled buffer and
// hands it to use (valid only during the call).
func decodeHexInto(c *Client, method string, digits []byte, use func(raw []byte) error) error {
	if len(digits)%2 != 0 {
		return fmt.Errorf("%w: %s: hex: odd length %d", ErrMalformed, method, len(digits))
	}
	raw := c.bufs.get()
	defer c.bufs.put(raw)
	if cap(*raw) < len(digits)/2 {
		*raw = make([]byte, len(digits)/2)
	}
	b := (*raw)[:len(digits)/2]
	if _, err := hex.Decode(b, digits); err != nil {
		return fmt.Errorf("%w: %s: hex: %v", ErrMalformed, method, err)
	}
	return use(b)
}

// decodeResponse decodes a single JSON-RPC reply into result, mapping an
// error object to *RPCError.
func decodeResponse(method string, status int, r io.Reader, result any) error {
	resp := response{Result: result}
	if err := json.NewDecoder(r).Decode(&resp); err != nil {
		return fmt.Errorf("%w: %s: decode reply (HTTP %d): %v", ErrMalformed, method, status, err)
	}
	if resp.Error != nil {
		resp.Error.Method = method
		return resp.Error
	}
	if status != http.StatusOK {
		return fmt.Errorf("%w: %s: HTTP %d without an error object", ErrMalformed, method, status)
	}
	return nil
}

// CallStream invokes method with params and hands the reply body, as it
// arrives, to decode.
func (c *Client) CallStream(ctx context.Context, method string, params []any, decode func(status int, r io.Reader) error) error {
	body, err := json.Marshal(request{JSONRPC: jsonRPCVersion, ID: c.nextID.Add(1), Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", method, err)
	}
	return c.post(ctx, method, body, decode)
}
