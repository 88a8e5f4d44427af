package api

import (
	"log/slog"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// TestSandboxUnenforcedAudited: a level the executor could not enforce is
// an audit record (and a journal warning), not only a field of the reply;
// the task_started record names only the level asked for.
func TestSandboxUnenforcedAudited(t *testing.T) {
	al, err := audit.Open(audit.Options{Log: slog.New(slog.DiscardHandler), Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Audit: al, Log: slog.New(slog.DiscardHandler)}
	s.sandboxApplied(audit.Record{User: "alice", Task: "t1"}, &protocol.SandboxInfo{Level: "workspace", Warning: "this kernel has no Landlock (ABI 0): running unconfined"})
	s.sandboxApplied(audit.Record{User: "alice", Task: "t2"}, &protocol.SandboxInfo{Level: "workspace", ABI: 7, Enforced: true})
	s.sandboxApplied(audit.Record{User: "alice", Task: "t3"}, &protocol.SandboxInfo{Level: "off"})
	s.sandboxApplied(audit.Record{User: "alice", Task: "t4"}, nil)
	recs := al.Query(audit.Filter{Action: audit.SandboxUnenforced})
	if len(recs) != 1 || recs[0].Task != "t1" || recs[0].Sandbox != "workspace" || recs[0].Reason == "" {
		t.Fatalf("records %+v, want one for t1 with the level and the warning", recs)
	}
}

// TestSandboxUndoneAudited: what the executor disabled after a confined
// run (a nested repository's fsmonitor) is an audit record naming it.
func TestSandboxUndoneAudited(t *testing.T) {
	al, err := audit.Open(audit.Options{Log: slog.New(slog.DiscardHandler), Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Audit: al, Log: slog.New(slog.DiscardHandler)}
	undone := "sub/.git/config: fsmonitor = touch ~/ran (now sub/.git/config.agor-disabled)"
	s.sandboxApplied(audit.Record{User: "alice", Task: "t1", Sandbox: "workspace"},
		&protocol.SandboxInfo{Level: "workspace", ABI: 7, Enforced: true, View: "namespace", Undone: []string{undone}})
	s.sandboxApplied(audit.Record{User: "alice", Task: "t2"}, &protocol.SandboxInfo{Level: "workspace", ABI: 7, Enforced: true})
	recs := al.Query(audit.Filter{Action: audit.SandboxUndone})
	if len(recs) != 1 || recs[0].Task != "t1" || recs[0].Reason != undone {
		t.Fatalf("records %+v, want one for t1 naming what was disabled", recs)
	}
}
