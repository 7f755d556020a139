package attack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// httpIdleAttack holds env.HTTPConns HTTP connections, each idle after
// one request, from addresses of 32 connections each, and reopens those
// the server closes after a pause.
func httpIdleAttack(ctx context.Context, env Env, t *Tally) {
	dials := make(chan struct{}, 128) // dials in progress at once
	workers(ctx, env.HTTPConns, func(ctx context.Context, i, round int) {
		if round > 0 {
			Pause(ctx, time.Second)
		}
		dials <- struct{}{}
		d := net.Dialer{Timeout: hostileIOTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ipIn(40, i/32))}}
		conn, err := d.DialContext(ctx, "tcp", env.HTTPAddr)
		<-dials
		if err != nil {
			t.Refused.Add(1)
			return
		}
		t.Conns.Add(1)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		defer stop()
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(hostileIOTimeout))
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: cfindexd\r\n\r\n"); err != nil {
			return
		}
		rd := bufio.NewReaderSize(conn, 512)
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Refused.Add(1)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Refused.Add(1)
			return
		}
		t.Ops.Add(1)
		// Idle until the server closes the connection.
		_ = conn.SetDeadline(time.Time{})
		_, _ = rd.ReadByte()
	})
}

// bulkSlowRate is how fast the bulk-slow attackers read: just above the
// server's default minimum transfer rate (httpbulkminrate, 32 KiB/s), so
// each holds its slot as long as it can.
const bulkSlowRate = 40 << 10

// bulkSlowAttack has 8 clients, 2 per address, download the first bulk
// filters file at bulkSlowRate, starting over when it ends or is cut.
func bulkSlowAttack(ctx context.Context, env Env, t *Tally) {
	workers(ctx, 8, func(ctx context.Context, i, round int) {
		d := net.Dialer{Timeout: hostileIOTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ipIn(50, i/2))}}
		conn, err := d.DialContext(ctx, "tcp", env.HTTPAddr)
		if err != nil {
			t.Refused.Add(1)
			Pause(ctx, time.Second)
			return
		}
		t.Conns.Add(1)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		defer stop()
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(hostileIOTimeout))
		if _, err := io.WriteString(conn, "GET /bulk/filters/0.bin HTTP/1.1\r\nHost: cfindexd\r\n\r\n"); err != nil {
			return
		}
		rd := bufio.NewReaderSize(conn, 4<<10)
		resp, err := http.ReadResponse(rd, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Refused.Add(1)
			Pause(ctx, time.Second)
			return
		}
		t.Ops.Add(1)
		_ = conn.SetDeadline(time.Time{})
		buf := make([]byte, bulkSlowRate/10)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})
}

// httpPipelineClass has 16 addresses of one /16 hold 32 HTTP connections
// each (the default httpmaxconns, 512, in all), each pipelining 100
// requests for 2,000 filter headers and never reading; every 3 s each
// connection pipelines one more (a write that fails tells the server has
// closed it: the attacker then reconnects).
func httpPipelineClass() Class {
	return Class{
		Name: "http-pipeline", OpsUnit: "requests pipelined",
		Title: "16 addresses of one /16 × 32 HTTP connections pipeline 100 requests for 2,000 filter headers each and never read; good REST clients, one in that /16",
		Home:  "127.150.0.1",
		Run:   httpPipelineAttack,
	}
}

// httpPipelineAttack is the http-pipeline class's attack.
func httpPipelineAttack(ctx context.Context, env Env, t *Tally) {
	request := []byte("GET /rest/blockfilterheaders/basic/" + env.Hashes[0].String() + ".bin?count=2000 HTTP/1.1\r\nHost: cfindexd\r\n\r\n")
	burst := bytes.Repeat(request, 100)
	dials := make(chan struct{}, 64) // dials in progress at once
	workers(ctx, 16*32, func(ctx context.Context, i, round int) {
		if round > 0 {
			Pause(ctx, time.Second)
		}
		dials <- struct{}{}
		d := net.Dialer{Timeout: hostileIOTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.150.0.%d", 1+i/32))}}
		conn, err := d.DialContext(ctx, "tcp", env.HTTPAddr)
		<-dials
		if err != nil {
			t.Refused.Add(1)
			return
		}
		t.Conns.Add(1)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 10) // the answers back up at once
		}
		defer context.AfterFunc(ctx, func() { conn.Close() })()
		defer conn.Close()
		payload := burst
		for ctx.Err() == nil {
			_ = conn.SetWriteDeadline(time.Now().Add(hostileIOTimeout))
			if _, err := conn.Write(payload); err != nil {
				return
			}
			t.Ops.Add(int64(len(payload) / len(request)))
			payload = request
			Pause(ctx, 3*time.Second)
		}
	})
}
