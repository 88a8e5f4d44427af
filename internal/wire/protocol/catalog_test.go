package protocol_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

var update = flag.Bool("update", false, "rewrite the golden files from the catalog below")

func u32(v uint32) *uint32 { return &v }
func yes() *bool           { b := true; return &b }

// message is one entry of the catalog: a method's params or result (or a
// notification's params) with an example value. Its golden file is
// testdata/METHOD.KIND.json.
type message struct {
	method, kind string // kind: params or result
	v            any
}

func (m message) file() string { return filepath.Join("testdata", m.method+"."+m.kind+".json") }

// catalog is every message of the wire, as documented in docs/protocol.md
// (checked by docs_test.go).
var catalog = []message{
	{protocol.MethodHello, "params", protocol.HelloParams{Token: "q0Gm3c2bC9rYwZx7Jp1sVfLk4tN8uHd6eA5iR2oXyBw", User: "alice", JobID: "4242", Node: "node1", PID: 5150}},
	{protocol.MethodHello, "result", protocol.HelloResult{Accepted: true}},
	{protocol.MethodSubmitJob, "params", protocol.SubmitJobParams{Script: "#!/bin/sh\nexec /usr/libexec/agor/agor-executor --dial login:7443 --dial-ca /etc/agor/dialback-ca.pem <<'AGOR_TOKEN'\n...\nAGOR_TOKEN\n",
		JobName: "agor-executor", Partition: "main", TimeLimit: "8:00:00", Memory: "4G", CPUs: 2, Signal: "B:USR1@300", Output: "/tmp/agor-executor-%u-%j.log"}},
	{protocol.MethodSubmitJob, "result", protocol.SubmitJobResult{JobID: "4242"}},
	{protocol.MethodCancelJob, "params", protocol.CancelJobParams{JobID: "4242", Signal: "TERM"}},
	{protocol.MethodCancelJob, "result", protocol.CancelJobResult{}},
	{protocol.MethodPing, "params", protocol.PingParams{Protocol: 1}},
	{protocol.MethodPing, "result", protocol.PingResult{Pong: true, Timestamp: 1763900000000, PID: 4242, UID: 1001, User: "alice", Version: "0.1.0", UptimeMS: 1500, Protocol: 1}},
	{protocol.MethodSocketHolders, "params", protocol.SocketHoldersParams{Inode: 4242}},
	{protocol.MethodSocketHolders, "result", protocol.SocketHoldersResult{Holders: 1, Confined: true}},
	{protocol.MethodShutdown, "params", protocol.ShutdownParams{Reason: "idle", TimeoutMS: 5000}},
	{protocol.MethodShutdown, "result", protocol.ShutdownResult{Status: protocol.ShutdownCompleted}},

	{protocol.MethodExecutePrompt, "params", protocol.ExecutePromptParams{
		SessionToken: "tok-abc", SessionID: "s1", TaskID: "t1", Tool: protocol.ToolClaudeCode, Prompt: "explain this repo",
		Cwd: "src/app", Tools: []string{"Read", "Edit"}, PermissionMode: protocol.ModeAcceptEdits, TimeoutMS: 600000,
		Model: "claude-sonnet", AgentSessionID: "agent-7", Sandbox: protocol.SandboxWorkspace, GatewayToken: "agor-gw2.t1.s1.1001.mac"}},
	{protocol.MethodExecutePrompt, "result", protocol.ExecutePromptResult{
		Status: protocol.StatusFailed, MessageCount: 3, AgentSessionID: "agent-7",
		Usage:   protocol.TokenUsage{InputTokens: 120, OutputTokens: 40, CacheReadTokens: 10, CacheWriteTokens: 5},
		Error:   &protocol.TaskError{Code: protocol.TaskModelAPI, Message: "the model refused"},
		Sandbox: &protocol.SandboxInfo{Level: protocol.SandboxWorkspace, ABI: 7, Enforced: true}, Warm: true}},
	{protocol.MethodStopTask, "params", protocol.StopTaskParams{TaskID: "t1", Reason: "stopped through the API"}},
	{protocol.MethodTaskNotice, "params", protocol.TaskNoticeParams{TaskID: "t1", Code: protocol.NoticeBudget, Message: "agor: 80% of the monthly budget of 20.00 USD is spent (16.10 USD), resets 2026-12-01"}},
	{protocol.MethodTaskNotice, "result", protocol.TaskNoticeResult{Emitted: true}},
	{protocol.MethodStopTask, "result", protocol.StopTaskResult{Stopped: true}},
	{protocol.MethodResumeTask, "params", protocol.ResumeTaskParams{TaskID: "t1", SessionToken: "tok-def", AfterSequence: 41}},
	{protocol.MethodResumeTask, "result", protocol.ExecutePromptResult{Status: protocol.StatusCompleted, MessageCount: 57, Prewarmed: true}},

	{protocol.MethodExec, "params", protocol.ExecParams{ExecID: "e1", Argv: []string{"git", "status"}, Cwd: "src",
		Env: map[string]string{"LANG": "C.UTF-8"}, Stdin: []byte("y\n"), TimeoutMS: 10000, Sandbox: protocol.SandboxReadOnly}},
	{protocol.MethodExec, "result", protocol.ExecResult{ExitCode: -1, Signal: "SIGKILL", TimedOut: true,
		Sandbox: &protocol.SandboxInfo{Level: protocol.SandboxReadOnly, Warning: "this kernel has no Landlock (ABI 0): running unconfined, as the configuration allows"}}},
	{protocol.MethodExecOutput, "params", protocol.ExecOutput{ExecID: "e1", Stream: protocol.StreamStdout, Seq: 0, Data: []byte("On branch main\n")}},

	{protocol.MethodReadFile, "params", protocol.ReadFileParams{Path: "src/main.go", Offset: 4096, Length: 1024}},
	{protocol.MethodReadFile, "result", protocol.ReadFileResult{Content: []byte("package main\n"), Offset: 4096, Size: 4109, EOF: true, Mode: 0o644}},
	{protocol.MethodWriteFile, "params", protocol.WriteFileParams{Path: "notes.txt", Content: []byte("hello"), Mode: u32(0o600), Offset: 0, Final: yes()}},
	{protocol.MethodWriteFile, "result", protocol.WriteFileResult{Path: "notes.txt", Size: 5, Committed: true}},
	{protocol.MethodWriteFiles, "params", protocol.WriteFilesParams{Files: []protocol.WriteFileParams{
		{Path: "a.txt", Content: []byte("a")}, {Path: "b/c.txt", Content: []byte("c"), Mode: u32(0o755)}}}},
	{protocol.MethodWriteFiles, "result", protocol.WriteFilesResult{Written: 1, Results: []protocol.FileResult{
		{Path: "a.txt", Size: 1},
		{Path: "b/c.txt", Error: &rpc.Error{Code: protocol.CodeNotFound, Message: "no directory b", Data: map[string]any{"reason": protocol.ReasonNotFound}}}}}},
	{protocol.MethodListFiles, "params", protocol.ListFilesParams{Path: "src", Pattern: "*.go", Recursive: true, Max: 100}},
	{protocol.MethodListFiles, "result", protocol.ListFilesResult{Truncated: true, Entries: []protocol.FileEntry{
		{Path: "src/main.go", Type: protocol.TypeFile, Size: 4109, Mode: 0o644, MtimeMS: 1763900000000},
		{Path: "src/pkg", Type: protocol.TypeDir, Size: 4096, Mode: 0o755, MtimeMS: 1763900000000}}}},
	{protocol.MethodWatch, "params", protocol.WatchParams{Path: "src", Recursive: true}},
	{protocol.MethodWatch, "result", protocol.WatchResult{WatchID: "w1"}},
	{protocol.MethodUnwatch, "params", protocol.UnwatchParams{WatchID: "w1"}},
	{protocol.MethodUnwatch, "result", protocol.UnwatchResult{Unwatched: true}},
	{protocol.MethodFileEvent, "params", protocol.FileEvent{WatchID: "w1", Path: "src/main.go", Op: protocol.OpModify}},

	{protocol.MethodSpawnTerminal, "params", protocol.SpawnTerminalParams{Cwd: "src", Shell: "/bin/bash",
		Env: map[string]string{"TERM": "xterm-256color"}, Cols: 120, Rows: 40, Sandbox: protocol.SandboxOff}},
	{protocol.MethodSpawnTerminal, "result", protocol.SpawnTerminalResult{TerminalID: "term-1", PID: 5151}},
	{protocol.MethodAttachTerminal, "params", protocol.TerminalIDParams{TerminalID: "term-1"}},
	{protocol.MethodAttachTerminal, "result", protocol.AttachTerminalResult{TerminalID: "term-1", PID: 5151, Cols: 120, Rows: 40,
		Scrollback: []byte("$ "), Seq: 7}},
	{protocol.MethodResizeTerminal, "params", protocol.ResizeTerminalParams{TerminalID: "term-1", Cols: 80, Rows: 24}},
	{protocol.MethodResizeTerminal, "result", protocol.ResizeTerminalResult{}},
	{protocol.MethodTerminateTerminal, "params", protocol.TerminalIDParams{TerminalID: "term-1"}},
	{protocol.MethodTerminateTerminal, "result", protocol.TerminateTerminalResult{Terminated: true}},
	{protocol.MethodListTerminals, "result", protocol.ListTerminalsResult{Terminals: []protocol.TerminalInfo{
		{TerminalID: "term-1", PID: 5151, Cols: 80, Rows: 24, Attached: true}}}},
	{protocol.MethodAttachTerminalRaw, "params", protocol.AttachTerminalRawParams{TerminalID: "term-1", Offset: 1048576, Handoff: true}},
	{protocol.MethodAttachTerminalRaw, "result", protocol.AttachTerminalRawResult{TerminalID: "term-1", PID: 5151, Cols: 120, Rows: 40,
		Offset: 1032192, End: 1097728}},
	{protocol.MethodTerminalInput, "params", protocol.TerminalInputParams{TerminalID: "term-1", Data: []byte("ls\r")}},
	{protocol.MethodTerminalOutput, "params", protocol.TerminalOutput{TerminalID: "term-1", Seq: 7, Data: []byte("a.txt\r\n")}},
	{protocol.MethodTerminalExit, "params", protocol.TerminalExit{TerminalID: "term-1", ExitCode: 0, Signal: "SIGHUP"}},

	{protocol.MethodGetAPIKey, "params", protocol.GetAPIKeyParams{SessionToken: "tok-abc", CredentialKey: "ANTHROPIC_API_KEY"}},
	{protocol.MethodGetAPIKey, "result", protocol.GetAPIKeyResult{APIKey: "sk-test-not-a-real-key"}},
	{protocol.MethodRequestPermission, "params", protocol.RequestPermissionParams{SessionToken: "tok-abc", TaskID: "t1",
		ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"rm -rf build"}`)}},
	{protocol.MethodRequestPermission, "result", protocol.RequestPermissionResult{Approved: false, Reason: "denied by alice", Scope: protocol.ScopeOnce}},
	{protocol.MethodReportMessage, "params", protocol.ReportMessage{SessionToken: "tok-abc", TaskID: "t1", Sequence: 3,
		Timestamp: 1763900000123, EventType: protocol.EventToolCall,
		EventData: json.RawMessage(`{"type":"tool_call","data":{"tool_input":{"command":"ls"},"tool_name":"Bash","tool_use_id":"u1"}}`)}},
	{protocol.MethodWarmAgents, "params", protocol.WarmAgentsParams{Agents: []protocol.WarmAgent{
		{SessionID: "s1", Tool: protocol.ToolClaudeCode, LastUsedMS: 1763900000123},
		{SessionID: "s2", Tool: protocol.ToolCodex, LastUsedMS: 1763900004567},
		{SessionID: "s3", Tool: protocol.ToolGemini, LastUsedMS: 1763900005000, Prewarmed: true}}}},
	{protocol.MethodGatewayRefused, "params", protocol.GatewayRefusedParams{Reason: protocol.RefusedAnotherAccount, UID: u32(1002), Count: 300}},
	{protocol.MethodReleaseWarmAgent, "params", protocol.ReleaseWarmAgentParams{SessionID: "s1", Tool: protocol.ToolClaudeCode,
		LastUsedMS: 1763900000123, Reason: "host cap"}},
	{protocol.MethodReleaseWarmAgent, "result", protocol.ReleaseWarmAgentResult{Released: true}},
	{protocol.MethodPrewarmAgent, "params", protocol.PrewarmAgentParams{SessionID: "s1", Tool: protocol.ToolCodex, Cwd: "src/app",
		PermissionMode: protocol.ModeDefault, Model: "gpt-5", Sandbox: protocol.SandboxWorkspace, Gateway: true}},
	{protocol.MethodPrewarmAgent, "result", protocol.PrewarmAgentResult{Started: false, Reason: protocol.PrewarmAlreadyWarm}},
}

// TestGolden checks each message both ways: the Go value encodes to its
// golden file, and the golden file decodes (refusing unknown fields) to
// the Go value.
func TestGolden(t *testing.T) {
	for _, m := range catalog {
		t.Run(m.method+"."+m.kind, func(t *testing.T) {
			got, err := json.MarshalIndent(m.v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			if *update {
				if err := os.WriteFile(m.file(), got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(m.file())
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Go → JSON differs from %s:\n%s", m.file(), cmp.Diff(string(want), string(got)))
			}
			back := reflect.New(reflect.TypeOf(m.v))
			dec := json.NewDecoder(bytes.NewReader(want))
			dec.DisallowUnknownFields()
			if err := dec.Decode(back.Interface()); err != nil {
				t.Fatalf("JSON → Go: %v", err)
			}
			if d := cmp.Diff(m.v, back.Elem().Interface(), sameJSON); d != "" {
				t.Errorf("JSON → Go differs (-catalog +decoded):\n%s", d)
			}
		})
	}
}

// TestCatalogComplete checks that every method has its messages in the
// catalog and that every golden file belongs to one.
func TestCatalogComplete(t *testing.T) {
	have := map[string]bool{}
	for _, m := range catalog {
		have[m.method+"."+m.kind] = true
	}
	notifications := []string{protocol.MethodTerminalInput, protocol.MethodReportMessage, protocol.MethodWarmAgents, protocol.MethodGatewayRefused}
	noParams := []string{protocol.MethodListTerminals}
	for _, method := range slices.Concat(protocol.ExecutorMethods, protocol.DaemonMethods) {
		if !slices.Contains(noParams, method) && !have[method+".params"] {
			t.Errorf("%s: no params in the catalog", method)
		}
		if !slices.Contains(notifications, method) && !have[method+".result"] {
			t.Errorf("%s: no result in the catalog", method)
		}
	}
	for _, method := range protocol.StreamNotifications {
		if !have[method+".params"] {
			t.Errorf("notification %s: no params in the catalog", method)
		}
	}
	files, _ := filepath.Glob("testdata/*.json")
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); !have[name] {
			t.Errorf("%s belongs to no message of the catalog", f)
		}
	}
}

// TestCatalogValid: every example params value is one the receiving end
// accepts, so the catalog shows valid messages.
func TestCatalogValid(t *testing.T) {
	for _, m := range catalog {
		if v, ok := m.v.(rpc.Validator); ok && m.kind == "params" {
			if err := v.Validate(); err != nil {
				t.Errorf("%s params: %v", m.method, err)
			}
		}
	}
}

// TestMethodsUnique: no method name is listed twice, across both ends.
func TestMethodsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range slices.Concat(protocol.ExecutorMethods, protocol.DaemonMethods, protocol.StreamNotifications) {
		if seen[m] {
			t.Errorf("%s listed twice", m)
		}
		seen[m] = true
	}
}

// TestValidation: each params type refuses what it must, naming the field.
func TestValidation(t *testing.T) {
	cases := []struct {
		v     rpc.Validator
		field string
	}{
		{protocol.ExecutePromptParams{SessionID: "s", TaskID: "t", Tool: "codex", Prompt: "p"}, "session_token"},
		{protocol.ExecutePromptParams{SessionToken: "k", SessionID: "s", TaskID: "t", Tool: "codex", Prompt: "p", PermissionMode: "yolo"}, "permission_mode"},
		{protocol.StopTaskParams{}, "task_id"},
		{protocol.ResumeTaskParams{SessionToken: "t"}, "task_id"},
		{protocol.ResumeTaskParams{TaskID: "t1"}, "session_token"},
		{protocol.ResumeTaskParams{TaskID: "t1", SessionToken: "t", AfterSequence: -2}, "after_sequence"},
		{protocol.ExecParams{Argv: []string{""}}, "argv"},
		{protocol.ExecParams{Argv: []string{"ls"}, TimeoutMS: -1}, "timeout_ms"},
		{protocol.ReadFileParams{Path: "a", Offset: -1}, "offset"},
		{protocol.WriteFileParams{Path: "a", Mode: u32(0o10000)}, "mode"},
		{protocol.WriteFilesParams{Files: []protocol.WriteFileParams{{Path: "a", Offset: 3}}}, "files[0]"},
		{protocol.ListFilesParams{Pattern: "["}, "pattern"},
		{protocol.UnwatchParams{}, "watch_id"},
		{protocol.SpawnTerminalParams{Cols: 0, Rows: 24}, "cols"},
		{protocol.SpawnTerminalParams{Cols: 80, Rows: 24, Env: map[string]string{"A=B": "x"}}, "env"},
		{protocol.SpawnTerminalParams{Cols: 80, Rows: 24, Shell: "sh\x00"}, "shell"},
		{protocol.ResizeTerminalParams{TerminalID: "t", Cols: 80, Rows: 1001}, "rows"},
		{protocol.TerminalIDParams{}, "terminal_id"},
		{protocol.AttachTerminalRawParams{}, "terminal_id"},
		{protocol.AttachTerminalRawParams{TerminalID: "t", Offset: -1}, "offset"},
		{protocol.GetAPIKeyParams{CredentialKey: "K"}, "session_token"},
		{protocol.RequestPermissionParams{SessionToken: "k", TaskID: "t"}, "tool_name"},
		{protocol.ReportMessage{TaskID: "t", Sequence: -1, EventType: "usage"}, "sequence"},
		{protocol.ReportMessage{TaskID: "t", EventType: "text_delta\n\nevent: forged"}, "event_type"},
		{protocol.ReportMessage{TaskID: "t", EventType: "assistant"}, "event_type"},
		{protocol.ShutdownParams{TimeoutMS: -5}, "timeout_ms"},
		{protocol.ExecParams{Argv: []string{"ls"}, Sandbox: "jail"}, "sandbox"},
		{protocol.SpawnTerminalParams{Cols: 80, Rows: 24, Sandbox: "strict"}, "sandbox"},
		{protocol.HelloParams{User: "alice", JobID: "1"}, "token"},
		{protocol.HelloParams{Token: "t", User: "alice"}, "job_id"},
		{protocol.SubmitJobParams{Script: "sleep 1", JobName: "j"}, "script"},
		{protocol.SubmitJobParams{Script: "#!/bin/sh\n", JobName: "j", Partition: "main --uid=0"}, "partition"},
		{protocol.SubmitJobParams{Script: "#!/bin/sh\n", JobName: "j", TimeLimit: "1:00\n#SBATCH --uid=0"}, "time_limit"},
		{protocol.SubmitJobParams{Script: "#!/bin/sh\n"}, "job_name"},
		{protocol.CancelJobParams{JobID: "1; rm -rf /"}, "job_id"},
		{protocol.CancelJobParams{JobID: "12", Signal: "-9 13"}, "signal"},
		{protocol.WarmAgentsParams{Agents: []protocol.WarmAgent{{SessionID: "s", Tool: "codex", LastUsedMS: 1}, {Tool: "codex", LastUsedMS: 1}}}, "agents[1].session_id"},
		{protocol.WarmAgentsParams{Agents: []protocol.WarmAgent{{SessionID: "s", Tool: "codex"}}}, "agents[0].last_used_ms"},
		{protocol.WarmAgentsParams{Agents: make([]protocol.WarmAgent, protocol.MaxWarmAgents+1)}, "agents"},
		{protocol.ReleaseWarmAgentParams{SessionID: "s"}, "agentic_tool"},
		{protocol.ReleaseWarmAgentParams{SessionID: "s", Tool: "codex", LastUsedMS: -1}, "last_used_ms"},
		{protocol.PrewarmAgentParams{Tool: "codex", Gateway: true}, "session_id"},
		{protocol.PrewarmAgentParams{SessionID: "s", Gateway: true}, "agentic_tool"},
		{protocol.PrewarmAgentParams{SessionID: "s", Tool: "codex"}, "gateway"},
		{protocol.PrewarmAgentParams{SessionID: "s", Tool: "codex", Gateway: true, PermissionMode: "yolo"}, "permission_mode"},
		{protocol.GatewayRefusedParams{Reason: "because", Count: 1}, "reason"},
		{protocol.GatewayRefusedParams{Reason: protocol.RefusedNotATask}, "count"},
	}
	for _, c := range cases {
		err := c.v.Validate()
		var e *rpc.Error
		if err == nil || !errorAs(err, &e) || e.Code != rpc.CodeInvalidParams || e.Data["field"] != c.field {
			t.Errorf("%T: got %v, want invalid params naming %q", c.v, err, c.field)
		}
	}
}

// sameJSON compares raw JSON by its content, not its layout.
// (cmp would otherwise apply the comparer to every []byte too.)
var sameJSON = cmp.FilterPath(func(p cmp.Path) bool {
	return p.Last().Type() == reflect.TypeFor[json.RawMessage]()
}, cmp.Comparer(func(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}))

func errorAs(err error, e **rpc.Error) bool {
	re, ok := err.(*rpc.Error)
	*e = re
	return ok
}

// TestEventVocabulary: the vocabulary is closed and KnownEventType says so.
func TestEventVocabulary(t *testing.T) {
	for _, ty := range protocol.EventTypes {
		if !protocol.KnownEventType(ty) {
			t.Errorf("%s not known", ty)
		}
	}
	for _, ty := range []string{"", "tool", "data: x\n\nevent: forged"} {
		if protocol.KnownEventType(ty) {
			t.Errorf("%q known", ty)
		}
	}
}
