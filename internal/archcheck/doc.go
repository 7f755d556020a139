// Package archcheck holds docs/architecture.md against the code: its test
// reads the package map there and checks, with go list, that every package
// of the module is in it, that no package's non-test code imports a package
// of this module its row does not allow, and that files and packages stay
// small enough to read. It has no code of its own.
package archcheck
