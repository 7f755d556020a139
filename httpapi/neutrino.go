package httpapi

import "github.com/cfindexd/cfindexd/rangefile"

// Neutrino header-import files (neutrino v0.18.0 chainimport;
// rangefile.NeutrinoMetadata): ImportOptions.BlockHeadersSource and
// FilterHeadersSource take the URLs. The range form pins both files to the
// same heights; the whole-chain form follows the tip, so two downloads may
// differ by a block.

// NeutrinoMetadataSize is chainimport.ImportMetadataSize.
const NeutrinoMetadataSize = rangefile.NeutrinoMetadataSize

// neutrinoFile returns the bulk description of a neutrino import file
// starting at start.
func (s *Server) neutrinoFile(filters bool, start uint32) bulkFile {
	if filters {
		f := fheadersFile
		f.kind, f.prefix = "neutrino-filterheaders", rangefile.NeutrinoMetadata(s.cfg.Net, rangefile.NeutrinoFilterType, start)
		return f
	}
	f := headersFile
	f.kind, f.prefix = "neutrino-blockheaders", rangefile.NeutrinoMetadata(s.cfg.Net, rangefile.NeutrinoBlockType, start)
	return f
}
