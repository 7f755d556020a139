package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/store/storefile"
)

// Steps of create, reported to Options.createHook after each one.
const (
	stepTempCreated = "temp-created" // empty temporary file exists
	stepSchema      = "schema"       // bbolt file with the schema written and closed
	stepSynced      = "synced"       // temporary file fsynced
	stepLinked      = "linked"       // store visible at its path
	stepDirSynced   = "dir-synced"   // directory entry durable
)

// create builds a new, empty store for genesis at path without ever leaving
// a partial file there: it writes the bbolt file and the schema into a
// temporary file in the same directory, fsyncs it, links it to path (which
// fails rather than replaces if path appeared meanwhile, say from another
// process creating the same store: that store is then used), removes the
// temporary name and fsyncs the directory. A crash or a full disk at any
// step leaves either no file at path or a complete empty store; Open
// removes a temporary file a crash left once it is stale.
func create(path string, genesis chainhash.Hash, opts Options) (err error) {
	dir, base := storefile.SplitPath(path)
	tmp, err := os.CreateTemp(dir, base+storefile.CreatingInfix+"*")
	if err != nil {
		return fmt.Errorf("create store: %w", err)
	}
	name := tmp.Name()
	// The temporary name goes in every case: after a successful link the
	// store lives on under path.
	defer func() {
		if rerr := os.Remove(name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("create store: remove %s: %w", name, rerr)
		}
	}()
	step := func(s string) error {
		if opts.createHook == nil {
			return nil
		}
		if err := opts.createHook(s); err != nil {
			return fmt.Errorf("create store: after step %s: %w", s, err)
		}
		return nil
	}
	if err := step(stepTempCreated); err != nil {
		tmp.Close()
		return err
	}
	if err := writeNewStore(tmp, genesis, opts); err != nil {
		return fmt.Errorf("create store: %w", err)
	}
	if err := step(stepSchema); err != nil {
		return err
	}
	if !opts.NoSync {
		if err := storefile.SyncFile(name); err != nil {
			return fmt.Errorf("create store: %w", err)
		}
	}
	if err := step(stepSynced); err != nil {
		return err
	}
	if err := storefile.LinkNoReplace(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created meanwhile by someone else; Open checks it
		}
		return fmt.Errorf("create store: %w", err)
	}
	if err := step(stepLinked); err != nil {
		return err
	}
	if !opts.NoSync {
		if err := storefile.SyncDir(dir); err != nil {
			return fmt.Errorf("create store: %w", err)
		}
	}
	return step(stepDirSynced)
}

// writeNewStore initialises the empty file f as a bbolt file holding the
// schema, and closes it.
func writeNewStore(f *os.File, genesis chainhash.Hash, opts Options) error {
	db, err := bolt.Open(f.Name(), 0o600, &bolt.Options{
		Timeout:      time.Second,
		NoSync:       opts.NoSync,
		FreelistType: bolt.FreelistMapType,
		OpenFile:     func(string, int, os.FileMode) (*os.File, error) { return f, nil },
	})
	if err != nil {
		f.Close()
		return err
	}
	if err := db.Update(func(tx *bolt.Tx) error { return writeSchema(tx, genesis) }); err != nil {
		db.Close()
		return fmt.Errorf("write schema: %w", err)
	}
	return db.Close()
}

// writeSchema creates the buckets and the meta entries of an empty store.
func writeSchema(tx *bolt.Tx, genesis chainhash.Hash) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	// The version is a 4-byte big-endian integer, the form of a height key.
	if err := meta.Put(metaSchemaVersion, heightKey(SchemaVersion)); err != nil {
		return err
	}
	return meta.Put(metaGenesis, genesis[:])
}
