package main

import (
	"fmt"

	"github.com/cfindexd/cfindexd/httpapi"
)

// validateHTTPLimits checks the HTTP connection and bulk-download keys.
func (c *Config) validateHTTPLimits() error {
	if c.HTTPMaxConns < 1 || c.HTTPMaxConns > 100000 {
		return fmt.Errorf("httpmaxconns: %d is outside 1..100000", c.HTTPMaxConns)
	}
	if c.HTTPMaxConnsPerIP < 1 || c.HTTPMaxConnsPerIP > c.HTTPMaxConns {
		return fmt.Errorf("httpmaxconnsperip: %d is outside 1..httpmaxconns (%d)", c.HTTPMaxConnsPerIP, c.HTTPMaxConns)
	}
	if c.HTTPBulkPerIP < 1 || c.HTTPBulkPerIP > httpapi.DefaultMaxBulkInFlight {
		return fmt.Errorf("httpbulkperip: %d is outside 1..%d (the bulk downloads served at once)", c.HTTPBulkPerIP, httpapi.DefaultMaxBulkInFlight)
	}
	if c.HTTPBulkMinRate < 1 || c.HTTPBulkMinRate > 1<<20 {
		return fmt.Errorf("httpbulkminrate: %d KiB/s is outside 1..1048576", c.HTTPBulkMinRate)
	}
	return nil
}

// httpLimits copies the limit keys into the HTTP server's configuration.
func httpLimits(c Config, rc httpapi.Config) httpapi.Config {
	rc.MaxConns = c.HTTPMaxConns
	rc.MaxConnsPerAddr = c.HTTPMaxConnsPerIP
	rc.MaxBulkPerAddr = c.HTTPBulkPerIP
	rc.BulkMinRate = c.HTTPBulkMinRate << 10
	return rc
}
