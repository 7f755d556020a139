package gcs

import (
	"errors"
	"fmt"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// readCompactSize decodes the canonical CompactSize N at the front of b
// (internal/wirescan's reader) and returns the value and the number of
// bytes consumed. Its errors wrap exactly this package's sentinels:
// ErrNonCanonicalN or ErrTruncated.
func readCompactSize(b []byte) (uint64, int, error) {
	v, n, err := wirescan.ReadCompactSize(b)
	switch {
	case errors.Is(err, wirescan.ErrNonCanonical):
		return 0, 0, fmt.Errorf("CompactSize N: %v: %w", err, ErrNonCanonicalN)
	case err != nil:
		return 0, 0, fmt.Errorf("CompactSize N of %d bytes: %v: %w", len(b), err, ErrTruncated)
	}
	return v, n, nil
}
