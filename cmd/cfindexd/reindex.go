package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/hostres"
	"github.com/cfindexd/cfindexd/store/storefile"
)

// reindexFlag is the flag that rebuilds the store. It is a flag only, not a
// configuration key: left in a config file or the environment it would
// wipe the store at every start.
const reindexFlag = "reindex"

// reindexBackupInfix names the copy of the old store --reindex keeps:
// <store>.reindex-<UTC time>.
const reindexBackupInfix = ".reindex-"

// takeReindexFlag removes --reindex (also -reindex, --reindex=true|false)
// from args and reports whether it was set.
func takeReindexFlag(args []string) (rest []string, reindex bool, err error) {
	for i, a := range args {
		if a == "--" {
			return append(rest, args[i:]...), reindex, nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != reindexFlag {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			reindex = true
			continue
		}
		if reindex, err = strconv.ParseBool(value); err != nil {
			return nil, false, fmt.Errorf("flag --%s: %q is not true or false", reindexFlag, value)
		}
	}
	return rest, reindex, nil
}

// reindexStore clears the way for a rebuild: it moves the store at path
// aside without opening it (it may be too damaged to open), so that Open
// creates an empty store and the follower indexes the chain again from the
// node.
//
// The old file is kept as <store>.reindex-<UTC time> when the disk has
// room to rebuild beside it (free space at least the old file's size plus
// a tenth), so that a mistaken --reindex costs nothing and a corrupt store
// can still be inspected; any older such backup is deleted first, so there
// is at most one. Without that room the old file is deleted: a disk that
// filled up is a common cause of the damage --reindex repairs, and a backup
// would make the rebuild fail the same way. Either way it is logged.
func reindexStore(path string, now time.Time, log zerolog.Logger) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		log.Info().Str("store", path).Msg("reindex: no store yet; building it from the node")
		return nil
	}
	if err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	old, _ := filepath.Glob(path + reindexBackupInfix + "*")
	for _, o := range old {
		if err := os.Remove(o); err != nil {
			return fmt.Errorf("reindex: remove the previous backup: %w", err)
		}
		log.Info().Str("backup", o).Msg("reindex: deleted the previous backup")
	}
	backup := path + reindexBackupInfix + now.UTC().Format("20060102T150405Z")
	free, known := hostres.FreeBytes(filepath.Dir(path))
	keep := !known || free >= uint64(fi.Size())+uint64(fi.Size())/10
	target := backup
	if !keep {
		target = ""
	}
	if _, err := storefile.MoveAside(path, target, time.Second); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	if keep {
		log.Info().Str("store", path).Str("backup", backup).Int64("bytes", fi.Size()).
			Msg("reindex: kept the old store as a backup (delete it once the rebuild is done); rebuilding from the node")
	} else {
		log.Warn().Str("store", path).Int64("bytes", fi.Size()).Uint64("free_bytes", free).
			Msg("reindex: deleted the old store, the disk has no room to keep it beside the rebuild; rebuilding from the node")
	}
	return nil
}
