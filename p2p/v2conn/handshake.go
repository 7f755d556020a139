package v2conn

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/btcsuite/btcd/btcec/v2/ellswift"
)

// readBufferSize is the connection's read buffer; larger reads bypass it.
const readBufferSize = 8 << 10

// Accept runs the responder's side of the BIP-324 handshake on conn, whose
// first bytes Detect has read (first, at most KeySize bytes), and returns
// the established connection.
//
// In order: our ElligatorSwift key and random garbage (Config.MaxGarbage)
// go out at once; the rest of the initiator's key is read; the ECDH gives
// the session keys; our garbage terminator and version packet go out; the
// initiator's garbage is read up to its terminator (at most MaxGarbage
// bytes, one 16-byte comparison per garbage byte); then its decoys and its
// version packet, whose contents are ignored as BIP-324 asks. The key steps
// pass Config.Admission.
//
// The whole handshake runs under Config.HandshakeTimeout, and ends when
// ctx is done; on success the connection is left without deadlines. On
// failure the caller closes conn.
func Accept(ctx context.Context, conn net.Conn, first []byte, cfg Config) (*Conn, error) {
	if len(first) > KeySize {
		return nil, fmt.Errorf("v2 handshake: %d first bytes, more than a key", len(first))
	}
	return handshakeOn(ctx, conn, cfg, func(cfg Config) (*Conn, error) {
		return handshake(conn, first, cfg, false)
	})
}

// Initiate runs the initiator's side of the BIP-324 handshake on conn, a
// fresh outbound connection, and returns the established connection.
//
// In order: our key and random garbage (Config.MaxGarbage) go out at
// once; the responder's key is read; the ECDH gives the session keys; our
// garbage terminator and version packet go out; the responder's garbage,
// its terminator, its decoys and its version packet are read, within the
// same bounds as Accept's.
//
// A responder that speaks v1 only reads our key as a malformed v1 header
// and hangs up: Initiate returns an error wrapping ErrV1Only when the
// connection ends before a byte of the responder's key arrived, and the
// caller may connect again over v1 (Core's v1 fallback).
//
// Deadlines, ctx and Config.Admission work as for Accept. On failure the
// caller closes conn.
func Initiate(ctx context.Context, conn net.Conn, cfg Config) (*Conn, error) {
	return handshakeOn(ctx, conn, cfg, func(cfg Config) (*Conn, error) {
		return handshake(conn, nil, cfg, true)
	})
}

// handshakeOn runs run under cfg's handshake deadline and ctx.
func handshakeOn(ctx context.Context, conn net.Conn, cfg Config, run func(Config) (*Conn, error)) (*Conn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.HandshakeTimeout > 0 {
		if err := conn.SetDeadline(time.Now().Add(cfg.HandshakeTimeout)); err != nil {
			return nil, fmt.Errorf("v2 handshake: %w", err)
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	c, err := run(cfg)
	if !stop() {
		return nil, fmt.Errorf("v2 handshake: %w", context.Cause(ctx))
	}
	if err != nil {
		return nil, fmt.Errorf("v2 handshake: %w", err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("v2 handshake: %w", err)
	}
	return c, nil
}

// handshake is either side's handshake over any connection. The two sides
// do the same steps; the responder's key exchange starts with the bytes
// Detect read (first), and it refuses a v1 peer of another network, while
// the initiator tells a v1-only responder by its hang-up.
func handshake(conn io.ReadWriter, first []byte, cfg Config, initiator bool) (*Conn, error) {
	src := io.Reader(conn)
	if len(first) > 0 {
		src = io.MultiReader(bytes.NewReader(first), conn)
	}
	br := bufio.NewReaderSize(src, readBufferSize)

	priv, ours, err := admitted(cfg.Admission, ellswift.EllswiftCreate)
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	garbage, err := randomGarbage(cfg.MaxGarbage)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(append(ours[:], garbage...)); err != nil {
		return nil, fmt.Errorf("send key: %w", err)
	}

	var theirs [KeySize]byte
	if n, err := io.ReadFull(br, theirs[:]); err != nil {
		if initiator && n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return nil, fmt.Errorf("read key: %w (%v)", ErrV1Only, err)
		}
		return nil, fmt.Errorf("read key: %w", err)
	}
	if prefix := v1Prefix(cfg.Net); !initiator && bytes.Equal(theirs[4:PrefixSize], prefix[4:]) {
		return nil, fmt.Errorf("%w: magic %x", ErrWrongNetwork, theirs[:4])
	}
	s, _, err := admitted(cfg.Admission, func() (session, struct{}, error) {
		s, err := agree(priv, ours, theirs, initiator, cfg.Net)
		return s, struct{}{}, err
	})
	if err != nil {
		return nil, err
	}

	c := newConn(br, conn, s, cfg)
	// Our terminator and version packet (empty contents), the garbage as
	// its associated data, in one write.
	version, err := c.wr.seal(garbage, false, nil, nil)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(append(s.sendTerm[:], version...)); err != nil {
		return nil, fmt.Errorf("send terminator: %w", err)
	}

	theirGarbage, err := readGarbage(br, s.recvTerm)
	if err != nil {
		return nil, err
	}
	c.stats.garbage.Store(int64(len(theirGarbage)))
	if err := c.readVersion(theirGarbage); err != nil {
		return nil, err
	}
	return c, nil
}

// admitted runs step under admission, if any.
func admitted[A, B any](admission HandshakeAdmission, step func() (A, B, error)) (A, B, error) {
	if admission != nil {
		release, err := admission.Acquire()
		if err != nil {
			var a A
			var b B
			return a, b, fmt.Errorf("admission: %w", err)
		}
		if release != nil {
			defer release()
		}
	}
	return step()
}

// randomGarbage returns 0 to max random bytes, the length uniform.
func randomGarbage(max int) ([]byte, error) {
	if max == 0 {
		return nil, nil
	}
	g := make([]byte, rand.IntN(max+1))
	if _, err := crand.Read(g); err != nil {
		return nil, fmt.Errorf("garbage: %w", err)
	}
	return g, nil
}

// readGarbage reads the initiator's garbage and its terminator and returns
// the garbage. It looks for the terminator at each offset up to
// MaxGarbage with one 16-byte comparison against the buffered window, so
// the search is linear in the garbage; it refuses once MaxGarbage bytes of
// garbage and 16 more hold no terminator, without waiting for more.
func readGarbage(br *bufio.Reader, term [TerminatorSize]byte) ([]byte, error) {
	var garbage []byte
	for {
		window, err := br.Peek(TerminatorSize)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("read garbage after %d bytes: %w", len(garbage), err)
		}
		if [TerminatorSize]byte(window) == term {
			_, _ = br.Discard(TerminatorSize)
			return garbage, nil
		}
		if len(garbage) == MaxGarbage {
			return nil, ErrNoTerminator
		}
		b, _ := br.ReadByte() // buffered: Peek saw it
		garbage = append(garbage, b)
	}
}

// readVersion reads the initiator's decoys and version packet; the first
// packet carries the garbage as associated data.
func (c *Conn) readVersion(garbage []byte) error {
	p, err := c.nextMessage(garbage, false)
	if err != nil {
		return fmt.Errorf("read version packet: %w", err)
	}
	c.rd.release(p.held)
	return nil
}
