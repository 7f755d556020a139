package headers

// CheckpointInterval is the spacing, in blocks, of the filter headers a
// cfcheckpt message carries (BIP-157; Bitcoin Core's CFCHECKPT_INTERVAL).
const CheckpointInterval = 1000

// CheckpointHeights returns the heights whose filter headers answer a
// getcfcheckpt whose stop block is at stopHeight: CheckpointInterval,
// 2*CheckpointInterval, ... up to and including stopHeight. Genesis is not a
// checkpoint, so a stop below CheckpointInterval yields an empty slice.
func CheckpointHeights(stopHeight uint32) []uint32 {
	n := stopHeight / CheckpointInterval
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i+1) * CheckpointInterval
	}
	return out
}
