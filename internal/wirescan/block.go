package wirescan

import "fmt"

// BlockHeaderSize is a serialized block header.
const BlockHeaderSize = 80

// Block reads the start of a serialized block: its header (returned in
// place) and its transaction count, checked against the bytes that remain
// at MinTxSize each. The transactions follow; read them with Tx. A count
// of zero is returned as it is: whether a block without a coinbase is an
// error is the caller's rule (wire decodes one).
func (r *Reader) Block() (header []byte, txs int, err error) {
	if header, err = r.Next(BlockHeaderSize); err != nil {
		return nil, 0, fmt.Errorf("header: %w", err)
	}
	if txs, err = r.Count(MinTxSize); err != nil {
		return nil, 0, fmt.Errorf("transaction count: %w", err)
	}
	return header, txs, nil
}
