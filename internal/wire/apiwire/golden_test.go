package apiwire

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the values below")

func ptr[T any](v T) *T { return &v }

// golden is one value of every reply and error the API writes, by the
// name of its file in testdata: the JSON field names there are the
// contract (clients read them), so a change to a tag fails here first.
func golden() map[string]any {
	at := time.Date(2025, 11, 23, 10, 4, 5, 0, time.UTC)
	return map[string]any{
		"error":              ErrorBody{Error: ErrorDetail{Code: protocol.CodePermissionDenied, Reason: ReasonNotYourself, Message: "you may act only as yourself"}},
		"health":             Health{Status: "ok", Version: "0.1.0", Storage: &Storage{State: "full", StateDir: "/var/lib/agor", FreeBytes: 4096, MinFreeBytes: 1 << 20, Since: &at, Reason: "ENOSPC", Episodes: 1, Pending: 2}},
		"whoami":             Whoami{User: "alice", UID: 1000},
		"executor_list":      ExecutorList{Executors: []ExecutorInfo{{User: "alice", Socket: "active", Service: "active", Connected: true, Usage: &ExecutorUsage{MemoryBytes: ptr(uint64(1 << 20)), Source: "systemd"}, Network: &ExecutorNetwork{Mode: "proxy", Allowed: 3}}}},
		"executor_started":   ExecutorInfo{User: "alice", Connected: true, Ping: &protocol.PingResult{User: "alice", UID: 1000, PID: 42, Version: "0.1.0", UptimeMS: 1200, Timestamp: 1763900000123}},
		"executor_stopped":   ExecutorStopped{User: "alice", Stopped: true},
		"session_list":       SessionList{Sessions: []SessionView{{ID: "s1", UnixUser: "alice", AgenticTool: "claude-code", Cwd: "src/app", PermissionMode: "default", Status: "idle", CreatedAt: at, UpdatedAt: at}}},
		"task_list":          TaskList{Tasks: []TaskView{{ID: "t1", SessionID: "s1", UnixUser: "alice", Prompt: "hello", Status: "completed", Result: json.RawMessage(`{"status":"completed"}`), CreatedAt: at, EndedAt: &at}}},
		"task_stopped":       StopReply{Stopped: false, Status: "completed"},
		"prompt_accepted":    PromptAccepted{TaskID: "t1", SessionID: "s1", Status: "queued"},
		"prompt_stream":      promptStream(),
		"prompt_line":        PromptLine{Status: "incomplete", DroppedEvents: 2, Warning: "2 of the agent's events were not stored", Missing: []Range{{From: 3, To: 4}}},
		"exec_reply":         ExecReply{ExecResult: protocol.ExecResult{ExitCode: 3}, Stdout: "hi\n", OutputDroppedBytes: 10},
		"exec_line":          ExecLine{Stream: "stdout", Data: []byte("hi\n")},
		"frame":              Frame{Output: []byte("$ "), Resize: &[2]int{80, 24}},
		"attach_error":       AttachError{Error: "no terminal term_1"},
		"file_written":       FileWritten{Path: "a.txt", Size: 5},
		"credential_set":     CredentialSet{Name: "ANTHROPIC_API_KEY", Scope: ScopeUser},
		"credential_deleted": CredentialDeleted{Name: "ANTHROPIC_API_KEY", Deleted: true},
		"permission_list":    PermissionList{Permissions: []PermissionRequest{{ID: "perm_1", User: "alice", Session: "s1", Task: "t1", ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls"}`), AskedAt: at}}},
		"permission_decided": PermissionDecided{ID: "perm_1", Approved: true},
		"audit_list":         AuditList{Records: []AuditRecord{{Time: at, Action: "account_mismatch", User: "alice", UID: ptr(uint32(1001)), StoredUID: ptr(uint32(1000)), Session: "s1"}}},
		"orphan_list":        OrphanList{Orphans: []Orphan{{Name: "bob", UID: 1002, Sessions: 1, Tasks: 2, Events: 3, Credentials: []string{"OPENAI_API_KEY"}}}},
	}
}

// TestGolden: every reply encodes as its file in testdata says, and
// decodes from it to the same value.
func TestGolden(t *testing.T) {
	for name, v := range golden() {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name+".json")
			got, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s encodes as\n%s\nwant\n%s", name, got, want)
			}
			back := reflect.New(reflect.TypeOf(v))
			if err := json.Unmarshal(want, back.Interface()); err != nil {
				t.Fatal(err)
			}
			again, _ := json.MarshalIndent(back.Elem().Interface(), "", "  ")
			if !bytes.Equal(append(again, '\n'), want) {
				t.Errorf("%s does not decode to the same value: %s", path, again)
			}
		})
	}
}

// TestGoldenFiles: testdata holds no file that no type stands for.
func TestGoldenFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	g := golden()
	for _, f := range files {
		if _, ok := g[filepath.Base(f[:len(f)-len(".json")])]; !ok {
			t.Errorf("%s: no value in golden()", f)
		}
	}
}

// promptStream is one default-mode Claude Code turn as POST
// .../prompt streams it (ids, events, the result): the page's render
// test reads this file, so the page and agorctl read the same stream.
func promptStream() []PromptLine {
	ev := func(seq int64, typ string, data map[string]any) PromptLine {
		raw, _ := json.Marshal(protocol.Event{Type: typ, Data: data})
		return PromptLine{Event: &StoredEvent{TaskID: "t1", Sequence: seq, Type: typ, Data: raw}}
	}
	return []PromptLine{
		{TaskID: "t1", SessionID: "s1"},
		ev(1, "message_start", map[string]any{"role": "assistant"}),
		ev(2, "text_delta", map[string]any{"text": "I'll run "}),
		ev(3, "text_delta", map[string]any{"text": "it."}),
		ev(4, "message_stop", map[string]any{"role": "assistant"}),
		ev(5, "tool_call", map[string]any{"tool_use_id": "u1", "tool_name": "Bash", "tool_input": map[string]any{"command": "id -un > whoami.txt", "description": "who"}}),
		ev(6, "permission_asked", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "id -un > whoami.txt"}}),
		ev(7, "permission_decided", map[string]any{"tool_name": "Bash", "approved": true, "reason": "approved in Cockpit"}),
		ev(8, "tool_result", map[string]any{"tool_use_id": "u1", "output": "alice\n", "is_error": false}),
		ev(9, "text_delta", map[string]any{"text": "Done."}),
		ev(10, "usage", map[string]any{"input_tokens": 12, "output_tokens": 7}),
		{Result: json.RawMessage(`{"status":"completed","message_count":2,"token_usage":{"input_tokens":12,"output_tokens":7}}`)},
	}
}
