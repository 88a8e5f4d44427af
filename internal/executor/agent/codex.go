package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func init() { Register("codex", Codex{}) }

// Codex drives OpenAI's Codex CLI through `codex app-server`, its
// JSON-RPC protocol over stdio (without "jsonrpc", spoken through an
// rpc.Conn in its Bare dialect): one thread per agor session (the thread
// id is Result.AgentSession; Resume continues it with thread/resume), one
// turn per Run, command and file-change approvals answered through
// Host.Ask.
//
// Permission modes map onto Codex's approval policy; its sandbox is
// always "danger-full-access" (codexMode says why) and agor confines the
// agent instead:
//
//	default           approvalPolicy "untrusted": anything but Codex's
//	                  known-safe read-only commands asks; file edits ask;
//	                  agor's workspace level.
//	acceptEdits       as default, but file-change approvals are accepted
//	                  without asking (commands still ask).
//	bypassPermissions approvalPolicy "never": the user chose no checks,
//	                  and the executor already runs as the user's own
//	                  Unix account; confined only when the task asks.
//	plan              approvalPolicy "untrusted": what it asks for is
//	                  refused (plan changes nothing, for every agent);
//	                  agor's workspace level, as default.
type Codex struct{}

var _ Opener = Codex{}

// CodexBaseURLEnv, when set in the agent's environment, is the base URL
// (ending in /v1) of the Responses API Codex is configured to call.
const CodexBaseURLEnv = "AGOR_CODEX_BASE_URL"

// CodexSignInEnv "chatgpt" (set by the executor, under the model gateway,
// for a person signed in to Codex with her ChatGPT account) has agor's
// provider use that sign-in (requires_openai_auth) instead of a key.
const CodexSignInEnv = "AGOR_CODEX_SIGNIN"

// CodexDefaultModel is written to a new config.toml: a slug Codex 0.169
// knows, so it does not fall back to guessed model metadata.
const CodexDefaultModel = "gpt-5.5"

const (
	codexInstall  = "npm install -g @openai/codex"
	codexProvider = "agor"
	codexExitWait = 5 * time.Second // after stdin closes, before the kill
)

// CredentialKey is the variable the configured provider reads its key from.
func (Codex) CredentialKey() string { return "OPENAI_API_KEY" }

// Run runs one turn (Open, without keeping the process). A failure to
// start is returned as the *Error too; a turn that ran and failed is a
// failed Result with a nil error; when ctx ends first the Result is
// failed and the error is ctx's.
func (c Codex) Run(ctx context.Context, req Request, host Host) (Result, error) {
	return runOnce(ctx, c, req, host)
}

// Open runs one turn and keeps codex app-server for more: a thread takes
// any number of turn/start calls.
func (c Codex) Open(ctx context.Context, req Request, host Host) (Result, Live, error) {
	l, res, err := c.start(ctx, req)
	if l == nil {
		return res, nil, err
	}
	stopWatch := context.AfterFunc(ctx, l.kill) // cancelled while starting: kill at once
	err = l.open(ctx, req)
	stopWatch()
	if err != nil {
		t := l.newTurn(ctx, host, req)
		waitErr := l.close()
		res := t.finish(err, waitErr, l.p.Stderr())
		return res, nil, ctx.Err()
	}
	res, err = l.Turn(ctx, req, host)
	if !l.Usable() {
		return res, nil, err
	}
	return res, l, err
}

// Prepare starts codex app-server and starts (or resumes) the thread on
// a goroutine; the first Turn waits for it.
func (c Codex) Prepare(ctx context.Context, req Request) (Live, error) {
	l, _, err := c.start(ctx, req)
	if l == nil {
		return nil, err
	}
	l.ready = handshake(ctx, &l.readyErr, func(hctx context.Context) error { return l.open(hctx, req) })
	return l, nil
}

// start starts codex app-server for req and serves its connection; the
// process outlives ctx. No process: the Result and error say why.
func (c Codex) start(ctx context.Context, req Request) (*codexLive, Result, error) {
	policy, sandbox, err := codexMode(req.PermissionMode)
	if err != nil {
		return nil, Result{Status: "failed", Err: &Error{Code: protocol.TaskAgentCrashed, Message: err.Error()}}, err
	}
	if _, err := os.Stat(req.Binary); err == nil { // missing binary: Start says so
		if err := codexConfigure(req.Env, c.CredentialKey()); err != nil {
			return nil, Result{}, fmt.Errorf("codex: %w", err)
		}
	}
	pctx, kill := context.WithCancel(context.WithoutCancel(ctx))
	p, err := Start(pctx, req, codexInstall, codexArgs(req.Env, c.CredentialKey())...)
	if err != nil {
		kill()
		var e *Error
		if errors.As(err, &e) {
			return nil, Result{Status: "failed", Err: e}, err
		}
		return nil, Result{}, fmt.Errorf("codex: %w", err)
	}
	l := &codexLive{p: p, kill: kill, policy: policy, sandbox: sandbox, redact: keyRedactor(req.Env, c.CredentialKey()), task: req.TaskID}
	l.conn, l.served = p.ServeRPC(pctx, rpc.HandlerFunc(l.handle), rpc.Options{
		Bare:   true,
		OnLine: l.line,
		Logger: slog.Default().With("agent", "codex", "task", req.TaskID),
	})
	return l, Result{}, nil
}

// codexMode maps a permission mode onto an approval policy and a sandbox.
// Codex's own sandbox is never asked for: for workspace-write and
// read-only it starts bubblewrap, which needs user namespaces, mount(2)
// and seccomp(2), all refused by the executor's unit (and its legacy
// Landlock backend runs approved commands unconfined). Codex is told
// danger-full-access and agor's sandbox confines the whole agent at the
// level the mode promises instead (the task package's modeFloor).
func codexMode(mode string) (policy, sandbox string, err error) {
	switch mode {
	case "", "default", "acceptEdits", "plan":
		return "untrusted", "danger-full-access", nil
	case "bypassPermissions":
		return "never", "danger-full-access", nil
	}
	return "", "", fmt.Errorf("codex: unknown permission mode %q", mode)
}

// codexArgs start codex app-server. With CodexBaseURLEnv set (the
// model gateway's relay, whose port is this executor's), agor's provider
// is defined and chosen on the command line on every start, over
// whatever config.toml holds: the file is written once and is the
// person's (it may hold an earlier relay, OpenAI's own URL, or another
// provider chosen, which would send the turn around the gateway; with
// only base_url set, codex refused to start: "provider name must not be
// empty"). Profiles are files codex reads only when --profile names one.
func codexArgs(env []string, keyVar string) []string {
	url := Getenv(env, CodexBaseURLEnv)
	if url == "" {
		return []string{"app-server"}
	}
	// A ChatGPT sign-in gets a provider of its own name: one defined in
	// config.toml (agor writes env_key into it) would keep that key.
	id, auth := codexProvider, "env_key="+strconv.Quote(keyVar)
	if Getenv(env, CodexSignInEnv) == "chatgpt" {
		id, auth = codexProvider+"-chatgpt", "requires_openai_auth=true"
	}
	p := "model_providers." + id + "."
	set := []string{
		"model_provider=" + strconv.Quote(id),
		p + "name=" + strconv.Quote(id),
		p + "base_url=" + strconv.Quote(url),
		p + `wire_api="responses"`,
		p + "request_max_retries=0",
		p + "stream_max_retries=0",
		p + auth,
	}
	var args []string
	for _, kv := range set {
		args = append(args, "-c", kv)
	}
	return append(args, "app-server")
}

// codexHome is CODEX_HOME from env, else HOME/.codex.
func codexHome(env []string) string {
	if h := Getenv(env, "CODEX_HOME"); h != "" {
		return h
	}
	if h := Getenv(env, "HOME"); h != "" {
		return filepath.Join(h, ".codex")
	}
	return ""
}

// codexConfigure writes $CODEX_HOME/config.toml unless one exists: a
// provider reading its key from keyVar, at CodexBaseURLEnv's URL (else
// OpenAI's), with retries, analytics and plugins off. An existing file is
// the user's and is left alone.
func codexConfigure(env []string, keyVar string) error {
	home := codexHome(env)
	if home == "" {
		return errors.New("neither CODEX_HOME nor HOME is set")
	}
	path := filepath.Join(home, "config.toml")
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("codex home: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil // a concurrent turn wrote it
	}
	if err != nil {
		return fmt.Errorf("codex config: %w", err)
	}
	_, err = f.WriteString(codexConfig(Getenv(env, CodexBaseURLEnv), keyVar))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("codex config: %w", err)
	}
	return nil
}

func codexConfig(baseURL, keyVar string) string {
	if baseURL == "" {
		baseURL = "https://api.openai.com/v1"
	}
	return fmt.Sprintf(`# Written by agor for the codex agent; edit freely, agor will not overwrite it.
model = %q
model_provider = %q

[model_providers.%s]
name = "agor"
base_url = %q
env_key = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
unbounded_connection_retries = false
`, CodexDefaultModel, codexProvider, codexProvider, baseURL, keyVar)
}

// codexTrace, when set (by tests), sees every line codex writes.
var codexTrace func(task string, line []byte)

// codexTurn is the state of one turn. Codex's notifications are handled on
// the connection's read loop, in the order sent; its approval requests on
// goroutines of their own (see codex_events.go). mu keeps the state they
// share, and the order of the events they emit, consistent.
type codexTurn struct {
	ctx         context.Context
	conn        *rpc.Conn
	host        Host
	req         Request
	threadMode  string // the thread's policies, "policy/sandbox", when known
	threadModel string // the thread's model, when named
	redact      func([]byte) []byte
	finished    chan struct{} // closed at this turn's turn/completed

	mu       sync.Mutex
	threadID string
	turnID   string
	res      Result
	done     bool            // turn/completed came
	started  map[string]bool // items whose tool_call was emitted
	deltas   map[string]bool // agent messages that streamed deltas
	changes  map[string]json.RawMessage
	usageSet bool
}

func (t *codexTurn) isDone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done
}

// codexSandboxPolicy is turn/start's form of a sandbox mode.
var codexSandboxPolicy = map[string]string{
	"workspace-write": "workspaceWrite", "read-only": "readOnly", "danger-full-access": "dangerFullAccess",
}

// start starts the turn on the thread, in the turn's permission mode: a
// resumed thread otherwise keeps the policies it was created with, and a
// warm one those of its first turn.
func (t *codexTurn) start() error {
	policy, sandbox, err := codexMode(t.req.PermissionMode)
	if err != nil {
		return err
	}
	var turn struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	params := map[string]any{
		"threadId": t.threadID,
		"input":    []any{map[string]any{"type": "text", "text": t.req.Prompt}},
	}
	// Overrides cost codex ~10 ms a turn: sent when the thread's
	// policies are not known to be the mode's already.
	if mode := policy + "/" + sandbox; mode != t.threadMode {
		params["approvalPolicy"], params["sandboxPolicy"] = policy, map[string]string{"type": codexSandboxPolicy[sandbox]}
	}
	if m := t.req.Model; m != "" && m != t.threadModel {
		params["model"] = m
	}
	if err := call(t.ctx, t.conn, "turn/start", params, &turn); err != nil {
		return err
	}
	t.mu.Lock()
	if t.turnID == "" {
		t.turnID = turn.Turn.ID
	}
	t.mu.Unlock()
	return nil
}

// finish settles the Result once codex has exited (waitErr is how).
// cause is why the turn stopped early (nil after turn/completed, or when
// codex exited on its own).
func (t *codexTurn) finish(cause, waitErr error, stderr string) Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return t.res
	}
	t.res.Status = "failed"
	var callErr *callError
	switch {
	case t.ctx.Err() != nil:
		code := protocol.TaskAgentCrashed
		if errors.Is(t.ctx.Err(), context.DeadlineExceeded) {
			code = protocol.TaskTimeout
		}
		t.res.Err = &Error{Code: code, Message: "codex stopped: " + t.ctx.Err().Error()}
	case errors.As(cause, &callErr) && callErr.Method == "thread/resume":
		t.res.Err = resumeFailed(t.req.Resume, string(t.redact([]byte(callErr.said()))))
	case errors.As(cause, &callErr):
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: "codex " + string(t.redact([]byte(callErr.Error())))}
	case cause != nil && !errors.Is(cause, rpc.ErrClosed):
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: fmt.Sprintf("codex: %v; stderr: %s", cause, t.redact([]byte(stderr)))}
	default:
		msg := "exited before the turn completed"
		if waitErr != nil {
			msg = fmt.Sprintf("%s (%v)", msg, waitErr)
		} else if stderr != "" {
			msg += ": " + stderr
		}
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: "codex " + string(t.redact([]byte(msg)))}
	}
	return t.res
}
