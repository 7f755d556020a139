package nodeclient

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
)

// maxCookieSize bounds the cookie file we read; Core's is 75 bytes.
const maxCookieSize = 4096

// credentials hands out the user/password for the next request. With a
// cookie file it caches the file's content and re-reads it on demand (after
// a 401), so a node restart with a new cookie is picked up without a
// restart of ours.
type credentials struct {
	user, password string // static rpcuser/rpcpassword
	cookieFile     string

	mu     sync.Mutex
	cookie string // "user:password" last read from cookieFile
}

// get returns the credentials to send and the cookie they came from (empty
// for rpcuser/rpcpassword). A cookie that cannot be read wraps ErrAuth.
func (c *credentials) get() (user, password, cookie string, err error) {
	if c.cookieFile == "" {
		return c.user, c.password, "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cookie == "" {
		if err := c.readLocked(); err != nil {
			return "", "", "", err
		}
	}
	u, p, _ := splitCookie(c.cookie)
	return u, p, c.cookie, nil
}

// refresh re-reads the cookie file after a request sent with used got a
// 401. It reports whether the credentials now differ from used, i.e.
// whether retrying can help (also when a concurrent caller re-read first).
func (c *credentials) refresh(used string) bool {
	if c.cookieFile == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.readLocked(); err != nil {
		return false
	}
	return c.cookie != used
}

func (c *credentials) readLocked() error {
	f, err := os.Open(c.cookieFile)
	if err != nil {
		return markedError{fmt.Errorf("%w: read cookie file %s (is the node running with this datadir/network?): %v", ErrAuth, c.cookieFile, err), ErrNoCookie}
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxCookieSize+1))
	if err != nil {
		return fmt.Errorf("%w: read cookie file %s: %v", ErrAuth, c.cookieFile, err)
	}
	if len(buf) > maxCookieSize {
		return fmt.Errorf("%w: cookie file %s is larger than %d bytes", ErrAuth, c.cookieFile, maxCookieSize)
	}
	line := string(bytes.TrimRight(buf, "\r\n"))
	if _, _, ok := splitCookie(line); !ok {
		return fmt.Errorf("%w: cookie file %s is not user:password", ErrAuth, c.cookieFile)
	}
	c.cookie = line
	return nil
}

func splitCookie(s string) (user, password string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return s[:i], s[i+1:], i > 0
		}
	}
	return "", "", false
}
