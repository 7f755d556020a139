//go:build !unix

package main

// freeBytes cannot tell the free space here; --reindex then keeps the
// backup.
func freeBytes(string) (uint64, bool) { return 0, false }
