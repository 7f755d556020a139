//go:build !unix

package main

// checkFDLimit has no open file limit to check here.
func checkFDLimit(Config) error { return nil }
