package store

import (
	"bytes"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// downgradeToV2 rewrites the closed store at path as schema 2 wrote it:
// no CRC32Cs.
func downgradeToV2(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(downgradeTxToV2); err != nil {
		t.Fatal(err)
	}
}

// downgradeTxToV2 strips the CRC32Cs of schema 3 in tx.
func downgradeTxToV2(tx *bolt.Tx) error {
	trim := func(bucket []byte, fn func(v []byte) []byte) error {
		bk := tx.Bucket(bucket)
		var keys, values [][]byte
		err := bk.ForEach(func(k, v []byte) error {
			keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(fn(v)))
			return nil
		})
		if err != nil {
			return err
		}
		for i := range keys {
			if err := bk.Put(keys[i], values[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := trim(bucketFilterHeaders, func(v []byte) []byte { return v[:filterHeaderValueLenV2] }); err != nil {
		return err
	}
	if err := trim(bucketChecksums, func(v []byte) []byte { return v[:len(v)-crcLen] }); err != nil {
		return err
	}
	if err := trim(bucketStale, func(v []byte) []byte { return v[crcLen:] }); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(metaSchemaVersion, heightKey(schemaV2))
}
