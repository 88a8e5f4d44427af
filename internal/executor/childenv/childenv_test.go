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

// The operator's agent settings may name AGOR_* (the adapters' endpoints)
// but never service manager variables; the executor's own AGOR_* still
// stay out, and a request's extra cannot smuggle AGOR_* in.
func TestConfigured(t *testing.T) {
	base := []string{"HOME=/home/alice", "AGOR_EXECUTOR_IDLE_TIMEOUT=5s", "LISTEN_FDS=1"}
	got := Configured(base,
		map[string]string{"OPENAI_API_KEY": "k", "AGOR_X": "no"},
		map[string]string{"AGOR_CODEX_BASE_URL": "http://127.0.0.1:1/v1", "NOTIFY_SOCKET": "/run/n", "HOME": "/srv/h", "OPENAI_API_KEY": "overridden"})
	want := []string{"AGOR_CODEX_BASE_URL=http://127.0.0.1:1/v1", "HOME=/srv/h", "OPENAI_API_KEY=k"}
	if !slices.Equal(got, want) {
		t.Fatalf("Configured = %v, want %v", got, want)
	}
}
