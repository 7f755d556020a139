package p2pclient

import (
	"fmt"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// wire's decoders check declared counts against fixed maxima, not against
// the payload: a 60-byte tx declaring 780,000 inputs makes wire allocate
// them before it runs out of bytes. These walks (internal/wirescan's count
// reader) check every count against the bytes that remain, without
// allocating, before wire decodes. They leave to wire what wire checks
// itself — canonical CompactSizes, the witness flag's value, a witness
// behind the flag, trailing bytes — so they refuse nothing wire accepts
// (FuzzCheckTx).

// checkTx checks a tx payload's counts.
func checkTx(b []byte) error {
	r := wirescan.NewCountReader(b)
	if _, err := r.Tx(nil, nil); err != nil {
		return fmt.Errorf("%w: at byte %d: %v", ErrProtocol, r.Offset(), err)
	}
	return nil
}

// checkBlock checks a block payload's counts.
func checkBlock(b []byte) error {
	r := wirescan.NewCountReader(b)
	_, n, err := r.Block()
	for i := 0; err == nil && i < n; i++ {
		if _, err = r.Tx(nil, nil); err != nil {
			err = fmt.Errorf("transaction %d: %w", i, err)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: at byte %d: %v", ErrProtocol, r.Offset(), err)
	}
	return nil
}

// checkList checks a message that is a fixed prefix, a CompactSize count
// and that many items of itemSize bytes.
func checkList(b []byte, prefix, itemSize int) error {
	r := wirescan.NewCountReader(b)
	err := r.Skip(prefix)
	if err == nil {
		_, err = r.Count(itemSize)
	}
	if err != nil {
		return fmt.Errorf("%w: at byte %d: %v", ErrProtocol, r.Offset(), err)
	}
	return nil
}
