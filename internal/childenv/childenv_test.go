package childenv

import (
	"slices"
	"testing"
)

func TestBuild(t *testing.T) {
	base := []string{"HOME=/home/alice", "LISTEN_FDS=1", "LISTEN_PID=7", "LISTEN_FDNAMES=executor", "NOTIFY_SOCKET=/run/n",
		"WATCHDOG_USEC=1", "AGOR_EXECUTOR_IDLE_TIMEOUT=5s", "PATH=/usr/bin", "CREDENTIALS_DIRECTORY=/run/c"}
	got := Build(base, map[string]string{"FOO": "bar", "PATH": "/opt/bin", "LISTEN_FDS": "3", "AGOR_SECRET": "x", "A=B": "c"})
	want := []string{"FOO=bar", "HOME=/home/alice", "PATH=/opt/bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("Build = %v, want %v", got, want)
	}
}
