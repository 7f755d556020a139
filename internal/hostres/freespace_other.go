//go:build !unix

package hostres

// FreeBytes cannot tell the free space here; --reindex then keeps the
// backup.
func FreeBytes(string) (uint64, bool) { return 0, false }
