package nodep2p

import "errors"

// ErrMalformed means the peer sent a message this package could not
// decode, or a block other than the one asked for.
var ErrMalformed = errors.New("malformed P2P message from the node")
