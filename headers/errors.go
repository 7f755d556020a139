package headers

import "errors"

// ErrHeaderMismatch reports that a filter header computed from a filter does
// not equal the header it was checked against. VerifyChain wraps it with the
// offending index and both hashes.
var ErrHeaderMismatch = errors.New("filter header mismatch")

// ErrCountMismatch reports that the number of filters and the number of
// filter headers given to VerifyChain differ.
var ErrCountMismatch = errors.New("filter and header counts differ")
