package main

import (
	"bytes"
	"context"

	"github.com/cfindexd/cfindexd/cmd/cfindexd/internal/statusreport"
)

// fetchSPHeight asks the daemon's /metrics at base (http://host:port) for
// how far the silent-payment index reaches; false when the daemon does not
// export it (the index off, empty, or an older cfindexd) or cannot be
// asked.
func fetchSPHeight(ctx context.Context, base string) (uint64, bool) {
	body, err := fetchStatus(ctx, base+"/metrics", "")
	if err != nil {
		return 0, false
	}
	return statusreport.ParseMetric(bytes.NewReader(body), statusreport.SPHeightMetric)
}
