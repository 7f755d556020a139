package silentpay

import "errors"

// Sentinel errors. Every error this package returns wraps the sentinel that
// describes it, so callers branch with errors.Is.
var (
	// ErrPrevScriptCount reports spent scripts that do not pair one to one
	// with the inputs they are given for.
	ErrPrevScriptCount = errors.New("silentpay: spent script count does not match inputs")

	// ErrMalformedBlock reports block bytes that are not one serialized
	// block.
	ErrMalformedBlock = errors.New("silentpay: malformed block")

	// ErrMalformedTweakData reports tweak data that is not in the canonical
	// serialization of docs/silent-payments.md.
	ErrMalformedTweakData = errors.New("silentpay: malformed tweak data")

	// ErrInvalidTweak reports a served tweak that is not a compressed
	// point on the curve.
	ErrInvalidTweak = errors.New("silentpay: tweak is not a compressed curve point")

	// ErrInvalidScalar reports a hash that is not a valid secp256k1 scalar
	// (zero or not below the group order), where BIP-352 says to fail.
	ErrInvalidScalar = errors.New("silentpay: hash is not a valid scalar")

	// ErrNoInputKeys reports a send with no eligible input key, or input
	// keys that sum to zero.
	ErrNoInputKeys = errors.New("silentpay: no usable input keys")

	// ErrTooManyRecipients reports a send with more than KMax recipients
	// sharing one scan key.
	ErrTooManyRecipients = errors.New("silentpay: more than KMax outputs for one scan key")
)
