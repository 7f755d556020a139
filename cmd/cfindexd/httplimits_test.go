package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cfindexd/cfindexd/httpapi"
)

// TestHTTPLimitKeys: the HTTP limit keys are validated at start with one
// line naming the key, and reach the HTTP server's configuration (rates
// in KiB/s become bytes/s).
func TestHTTPLimitKeys(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--httpmaxconns=0"}, "httpmaxconns"},
		{[]string{"--httpmaxconns=64", "--httpmaxconnsperip=65"}, "httpmaxconnsperip"},
		{[]string{"--httpbulkperip=0"}, "httpbulkperip"},
		{[]string{"--httpbulkperip=9"}, "httpbulkperip"},
		{[]string{"--httpbulkminrate=0"}, "httpbulkminrate"},
	} {
		var stderr bytes.Buffer
		if code := run(tc.args, envFrom(nil), &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("%v: exit %d", tc.args, code)
		}
		if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %q does not name %s in one line", tc.args, msg, tc.want)
		}
	}
	cfg, err := loadConfig([]string{"--httpmaxconns=100", "--httpmaxconnsperip=10", "--httpbulkperip=3", "--httpbulkminrate=64"}, envFrom(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	rc := httpLimits(cfg, httpapi.Config{})
	if rc.MaxConns != 100 || rc.MaxConnsPerAddr != 10 || rc.MaxBulkPerAddr != 3 || rc.BulkMinRate != 64<<10 {
		t.Errorf("httpapi config %+v", rc)
	}
}
