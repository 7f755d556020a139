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

// downgradeToV3 rewrites the closed store at path as schema 3 wrote it:
// block headers without their CRC32Cs.
func downgradeToV3(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(downgradeTxToV3); err != nil {
		t.Fatal(err)
	}
}

// trimValues replaces every value of bucket in tx with what fn makes of it.
func trimValues(tx *bolt.Tx, bucket []byte, fn func(v []byte) []byte) error {
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

// downgradeTxToV3 strips the block headers' CRC32Cs of schema 4 in tx.
func downgradeTxToV3(tx *bolt.Tx) error {
	if err := trimValues(tx, bucketHeaders, func(v []byte) []byte { return v[:headerValueLenV3] }); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(metaSchemaVersion, heightKey(schemaV3))
}

// downgradeTxToV2 strips the CRC32Cs of schemas 3 and 4 in tx.
func downgradeTxToV2(tx *bolt.Tx) error {
	trim := func(bucket []byte, fn func(v []byte) []byte) error { return trimValues(tx, bucket, fn) }
	if err := downgradeTxToV3(tx); err != nil {
		return err
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
