package httpapi

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/wire/v2"
)

// Neutrino header-import file format (neutrino v0.18.0 chainimport): a
// 10-byte metadata prefix, then fixed-size headers (80-byte block headers
// or 32-byte filter headers) from the start height upward with nothing
// between them. ImportOptions.BlockHeadersSource and FilterHeadersSource
// take the URLs. The range form pins both files to the same heights; the
// whole-chain form follows the tip, so two downloads may differ by a
// block.
const (
	// NeutrinoMetadataSize is chainimport.ImportMetadataSize.
	NeutrinoMetadataSize = 4 + 1 + 1 + 4
	// neutrinoVersion 0 is the only (uncompressed) version neutrino reads.
	neutrinoVersion = 0
	// headerfs.Block and headerfs.RegularFilter.
	neutrinoBlockType  = 0
	neutrinoFilterType = 1
)

// neutrinoMetadata encodes the prefix: network magic (uint32 LE), version
// byte, header type byte, start height (uint32 LE).
func neutrinoMetadata(net wire.BitcoinNet, headerType byte, start uint32) []byte {
	b := make([]byte, NeutrinoMetadataSize)
	binary.LittleEndian.PutUint32(b[0:4], uint32(net))
	b[4] = neutrinoVersion
	b[5] = headerType
	binary.LittleEndian.PutUint32(b[6:10], start)
	return b
}

// neutrinoFile returns the bulk description of a neutrino import file
// starting at start.
func (s *Server) neutrinoFile(filters bool, start uint32) bulkFile {
	if filters {
		f := fheadersFile
		f.kind, f.prefix = "neutrino-filterheaders", neutrinoMetadata(s.cfg.Net, neutrinoFilterType, start)
		return f
	}
	f := headersFile
	f.kind, f.prefix = "neutrino-blockheaders", neutrinoMetadata(s.cfg.Net, neutrinoBlockType, start)
	return f
}
