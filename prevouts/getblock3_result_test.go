package prevouts

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/nodeclient"
)

// decodeGetBlock3 decodes the "result" member of a getblock <want> 3 reply
// (the JSON object of the block) as decodeGetBlock3Reply does.
func decodeGetBlock3(result []byte, want chainhash.Hash) (FetchedBlock, error) {
	d := g3Decoder{want: want}
	d.Reset(nil, result)
	fb, err := d.result()
	if err != nil {
		if errors.Is(err, nodeclient.ErrPruned) {
			return FetchedBlock{}, err
		}
		return FetchedBlock{}, fmt.Errorf("%w: getblock %s 3: %v", nodeclient.ErrMalformed, want, err)
	}
	return fb, nil
}
