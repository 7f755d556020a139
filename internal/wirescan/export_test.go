package wirescan

// ScanBlockUnchecked is scanBlockUnchecked for the external tests.
var ScanBlockUnchecked = scanBlockUnchecked
