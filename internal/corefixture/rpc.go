package corefixture

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// dispatch maps method + params to a recorded (or derived) result.
func (s *Server) dispatch(method string, params []json.RawMessage) ([]byte, *rpcErr) {
	s.mu.Lock()
	s.calls[method]++
	warmup, best, ac, started := s.warmup, s.best, s.active, s.started
	s.mu.Unlock()
	if warmup {
		return nil, &rpcErr{-28, "Loading block index…"}
	}
	fx := s.fx
	switch method {
	case "getbestblockhash":
		if best != nil {
			return quote(best.String()), nil
		}
		if ac != nil {
			return quote(ac.tip.String()), nil
		}
		return fx.chain[method], nil
	case "getblockchaininfo":
		info := fx.chain[method]
		if ac != nil {
			info = ac.chainInfoJSON(info)
		}
		if s.opts.PrunedBelow > 0 {
			info = prunedChainInfo(info, s.opts.PrunedBelow)
		}
		return info, nil
	case "getblockcount":
		if ac != nil {
			return []byte(strconv.Itoa(len(ac.byHeight) - 1)), nil
		}
		return fx.chain[method], nil
	case "getchaintips", "getmempoolinfo", "getdeploymentinfo", "getzmqnotifications":
		if s.opts.Btcd && method == "getzmqnotifications" {
			return nil, &rpcErr{-32601, "Method not found"}
		}
		return fx.chain[method], nil
	case "getnetworkinfo":
		if s.opts.Btcd {
			return nil, &rpcErr{-1, "Command unimplemented"}
		}
		if s.opts.Version == 0 {
			return fx.chain[method], nil
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(fx.chain[method], &m)
		v := s.opts.Version
		m["version"] = json.RawMessage(strconv.Itoa(v))
		m["subversion"] = quote(fmt.Sprintf("/Satoshi:%d.%d.%d/", v/10000, v/100%100, v%100))
		b, _ := json.Marshal(m)
		return b, nil
	case "version":
		if !s.opts.Btcd {
			return nil, &rpcErr{-32601, "Method not found"}
		}
		return []byte(`{"btcdjsonrpcapi":{"versionstring":"1.3.0","major":1,"minor":3,"patch":0,"prerelease":"","buildmetadata":""}}`), nil
	case "getindexinfo":
		if s.opts.Btcd {
			return nil, &rpcErr{-32601, "Method not found"}
		}
		if s.opts.NoTxIndex {
			return []byte(`{"basic block filter index":{"synced":true,"best_block_height":115}}`), nil
		}
		return fx.chain[method], nil
	case "uptime":
		return []byte(strconv.FormatInt(int64(time.Since(started)/time.Second), 10)), nil
	case "getblockhash":
		var height int64
		if len(params) < 1 || json.Unmarshal(params[0], &height) != nil {
			return nil, &rpcErr{-3, "JSON value is not an integer as expected"}
		}
		h, ok := fx.active[height]
		if ac != nil {
			ok = height >= 0 && height < int64(len(ac.byHeight))
			if ok {
				h = ac.byHeight[height]
			}
		}
		if !ok {
			return nil, &rpcErr{-8, "Block height out of range"}
		}
		return quote(h.String()), nil
	case "getblock":
		return s.getblock(params)
	case "getblockheader":
		b, e := s.blockParam(params)
		if e != nil {
			return nil, e
		}
		verbose := true
		if len(params) > 1 {
			_ = json.Unmarshal(params[1], &verbose)
		}
		if !verbose {
			return quote(hex.EncodeToString(b.Raw[:80])), nil
		}
		if ac != nil {
			return ac.headerJSON(b), nil
		}
		return b.HeaderJSON, nil
	case "getblockfilter":
		h, e := hashParam(params)
		if e != nil {
			return nil, e
		}
		if f, ok := fx.filters[h]; ok {
			return f, nil
		}
		return nil, &rpcErr{-5, "Block not found"}
	case "getrawtransaction":
		return s.getrawtransaction(params)
	case "sendrawtransaction":
		var txHex string
		if len(params) < 1 || json.Unmarshal(params[0], &txHex) != nil {
			return nil, &rpcErr{-3, "Expected type string"}
		}
		raw, err := hex.DecodeString(txHex)
		var tx wire.MsgTx
		if err != nil || tx.Deserialize(bytes.NewReader(raw)) != nil {
			return nil, &rpcErr{-22, "TX decode failed"}
		}
		return quote(tx.TxHash().String()), nil
	}
	return nil, &rpcErr{-32601, "Method not found"}
}

func (s *Server) getblock(params []json.RawMessage) ([]byte, *rpcErr) {
	b, e := s.blockParam(params)
	if e != nil {
		return nil, e
	}
	verbosity := 1
	if len(params) > 1 {
		var asBool bool
		if err := json.Unmarshal(params[1], &verbosity); err != nil {
			if json.Unmarshal(params[1], &asBool) != nil {
				return nil, &rpcErr{-3, "JSON value of type string is not of expected type number"}
			}
			verbosity = 0
			if asBool {
				verbosity = 1
			}
		}
	}
	if s.opts.PrunedBelow > 0 && b.Height < s.opts.PrunedBelow {
		return nil, &rpcErr{-1, "Block not available (pruned data)"}
	}
	switch verbosity {
	case 0:
		return quote(hex.EncodeToString(b.Raw)), nil
	case 3:
		if s.opts.Btcd || (s.opts.Version != 0 && s.opts.Version < 230000) {
			return nil, &rpcErr{-8, "Verbosity must be in range 0..2"}
		}
		return b.Verbose3, nil
	}
	return nil, &rpcErr{-32603, fmt.Sprintf("corefixture: getblock verbosity %d was not recorded", verbosity)}
}

func (s *Server) getrawtransaction(params []json.RawMessage) ([]byte, *rpcErr) {
	h, e := hashParam(params)
	if e != nil {
		return nil, e
	}
	if len(params) > 1 {
		var v any
		_ = json.Unmarshal(params[1], &v)
		if v != false && v != float64(0) && v != nil {
			return nil, &rpcErr{-32603, "corefixture: verbose getrawtransaction was not recorded"}
		}
	}
	if s.opts.NoTxIndex {
		if s.opts.Btcd {
			return nil, &rpcErr{-5, "The transaction index must be enabled to query the blockchain (specify --txindex)"}
		}
		return nil, &rpcErr{-5, "No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries. Use gettransaction for wallet transactions."}
	}
	raw, ok := s.fx.txs[h]
	if !ok {
		return nil, &rpcErr{-5, "No such mempool or blockchain transaction. Use gettransaction for wallet transactions."}
	}
	return quote(hex.EncodeToString(raw)), nil
}

func (s *Server) blockParam(params []json.RawMessage) (*Block, *rpcErr) {
	h, e := hashParam(params)
	if e != nil {
		return nil, e
	}
	b, ok := s.fx.byHash[h]
	if !ok {
		return nil, &rpcErr{-5, "Block not found"}
	}
	return b, nil
}

func hashParam(params []json.RawMessage) (chainhash.Hash, *rpcErr) {
	var str string
	if len(params) < 1 || json.Unmarshal(params[0], &str) != nil {
		return chainhash.Hash{}, &rpcErr{-3, "JSON value is not a string as expected"}
	}
	if len(str) != 64 {
		return chainhash.Hash{}, &rpcErr{-8, fmt.Sprintf("blockhash must be of length 64 (not %d, for '%s')", len(str), str)}
	}
	h, err := chainhash.NewHashFromStr(str)
	if err != nil {
		return chainhash.Hash{}, &rpcErr{-8, fmt.Sprintf("blockhash must be hexadecimal string (not '%s')", str)}
	}
	return *h, nil
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// prunedChainInfo rewrites getblockchaininfo as a pruned node reports it:
// "pruned": true and "pruneheight", the lowest height with block data.
func prunedChainInfo(recorded []byte, pruneHeight int32) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(recorded, &m); err != nil {
		return recorded
	}
	m["pruned"] = json.RawMessage("true")
	m["pruneheight"] = json.RawMessage(strconv.Itoa(int(pruneHeight)))
	out, err := json.Marshal(m)
	if err != nil {
		return recorded
	}
	return out
}
