// Package version holds the build's version, stamped by the linker.
package version

// Version is set with -ldflags "-X github.com/agor-sh/agor/internal/version.Version=...".
var Version = "0.0.0-dev"
