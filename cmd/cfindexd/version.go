package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is cfindexd's release version.
const version = "0.1.0"

// buildVersion says which cfindexd this is: the release, the VCS commit
// the binary was built from and the Go toolchain.
type buildVersion struct {
	Version string `json:"version"`
	// Commit is vcs.revision from the build info, with "+dirty" when the
	// tree had uncommitted changes; "unknown" when the build recorded none
	// (go run, go test, -buildvcs=false, a build outside a git checkout or
	// in a git worktree, whose .git is a file the go command does not
	// recognise).
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// readBuildVersion reads the build info the Go toolchain embedded.
func readBuildVersion() buildVersion {
	return buildVersionFrom(debug.ReadBuildInfo())
}

// buildVersionFrom is readBuildVersion for the given build info.
func buildVersionFrom(info *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: version, Commit: "unknown", GoVersion: runtime.Version()}
	if !ok || info == nil {
		return v
	}
	if info.GoVersion != "" {
		v.GoVersion = info.GoVersion
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		v.Commit = rev
		if dirty {
			v.Commit += "+dirty"
		}
	}
	return v
}

// String is the --version line.
func (v buildVersion) String() string {
	return fmt.Sprintf("cfindexd %s (commit %s, %s)", v.Version, v.Commit, v.GoVersion)
}
