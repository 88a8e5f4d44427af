package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// sandboxCommand is the tool turn of the sandbox tests: one write inside
// the cwd, one to $HOME/outside.txt and one to ~/.bashrc, each reporting
// how it went into inside.log (in the cwd), and the command itself
// succeeding whatever happened, so the agent carries on.
const sandboxCommand = `(echo in > inside.txt && echo inside:ok || echo inside:denied) >> inside.log 2>&1; ` +
	`(echo out > "$HOME/outside.txt" && echo outside:ok || echo outside:denied) >> inside.log 2>&1; ` +
	`(echo x >> "$HOME/.bashrc" && echo bashrc:ok || echo bashrc:denied) >> inside.log 2>&1; true`

// TestSandboxEachAgent runs the four real agent CLIs through daemon and
// executor with a tool turn that writes inside the cwd and outside it:
// under workspace the inside write lands, the kernel refuses the others
// (EACCES) while the agent and the task carry on; under read-only none
// lands and the turn still completes; under off all land.
func TestSandboxEachAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the four agent CLIs")
	}
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	for _, level := range []string{"workspace", "read-only", "off"} {
		home, err := os.MkdirTemp("", "agor-sandbox-home")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		_ = os.Chmod(home, 0o777)
		for _, c := range agenttest.CasesRunning(t, home, 0, sandboxCommand) {
			t.Run(level+"/"+c.Tool, func(t *testing.T) {
				for _, f := range []string{"outside.txt", ".bashrc"} {
					_ = os.Remove(filepath.Join(home, f))
				}
				h := startWith(t, func(string) string { return agentsYAML(c) }, nil)
				h.setCred(t, c.Cred, "sk-test-"+strings.ReplaceAll(c.Tool, "-", "")+"-5b0x")
				name, _ := target(t)
				proj := filepath.Join(h.work, "proj") // a workspace is a project, not the executor's root
				if err := os.Mkdir(proj, 0o777); err != nil || os.Chmod(proj, 0o777) != nil {
					t.Fatal(err)
				}
				lines := h.prompt(t, name, map[string]any{"agentic_tool": c.Tool, "prompt": c.ToolPrompt, "cwd": "proj",
					"permission_mode": "bypassPermissions", "timeout_ms": 120000, "sandbox": level})
				_, result := decisions(lines)
				if result == nil || result["status"] != "completed" {
					t.Fatalf("result %v; stream %v", result, lines)
				}
				// Judged on disk: what each write left.
				for f, written := range map[string]bool{
					filepath.Join(proj, "inside.txt"):  level != "read-only",
					filepath.Join(home, "outside.txt"): level == "off",
					filepath.Join(home, ".bashrc"):     level == "off",
				} {
					if _, err := os.Stat(f); (err == nil) != written {
						t.Errorf("under %s, %s: written %v, want %v; stream %v", level, f, err == nil, written, lines)
					}
				}
				if !strings.Contains(fmt.Sprint(lines), "event_type:tool_result") {
					t.Fatalf("the tool did not run: stream %v", lines)
				}
				if level == "workspace" { // read-only cannot write its log in the cwd
					log, _ := os.ReadFile(filepath.Join(proj, "inside.log"))
					if !refusedByKernel(string(log)) {
						t.Errorf("no EACCES or EROFS from the kernel in:\n%s", log)
					}
				}
				box := fmt.Sprint(result["sandbox"])
				if level != "off" && (!strings.Contains(box, level) || !strings.Contains(box, "enforced:true")) {
					t.Errorf("result's sandbox: %v", result["sandbox"])
				}
				if level == "workspace" && !strings.Contains(fmt.Sprint(lines), "event_type:sandbox") {
					t.Errorf("no sandbox event in the stream")
				}
			})
		}
	}
}

// TestSandboxExecAndTerminal: exec and a terminal under workspace, through
// the API: touch ./x works, touch ~/x (outside the cwd) is refused by the
// kernel; a level the configuration does not allow is a 400.
func TestSandboxExecAndTerminal(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	h := startWith(t, nil, func(c *config.Config) { c.Sandbox.Allowed = []string{"off", "workspace"} })
	name, _ := target(t)
	sub := filepath.Join(h.work, "proj")
	if err := os.Mkdir(sub, 0o777); err != nil || os.Chmod(sub, 0o777) != nil {
		t.Fatal(err)
	}
	code, out := h.do(t, "POST", "/v1/executors/"+name+"/exec", map[string]any{"argv": []string{"sh", "-c", "touch ./x; touch ../x"}, "cwd": "proj", "sandbox": "workspace"})
	if code != 200 || !refusedByKernel(fmt.Sprint(out["stderr"])) || !strings.Contains(fmt.Sprint(out["sandbox"]), "workspace") {
		t.Fatalf("exec under workspace: %d %v", code, out)
	}
	if _, err := os.Stat(filepath.Join(sub, "x")); err != nil {
		t.Fatalf("./x: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.work, "x")); err == nil {
		t.Fatal("../x was written under workspace")
	}
	code, out = h.do(t, "POST", "/v1/executors/"+name+"/exec", map[string]any{"argv": []string{"true"}, "cwd": ".", "sandbox": "read-only"})
	if code != 400 || !strings.Contains(fmt.Sprint(out), "sandbox") {
		t.Fatalf("a level not allowed: %d %v", code, out)
	}
	code, out = h.do(t, "POST", "/v1/executors/"+name+"/terminals", map[string]any{"cwd": "proj", "shell": "/bin/sh", "cols": 80, "rows": 24, "sandbox": "workspace"})
	id, _ := out["terminal_id"].(string)
	if code != 200 || id == "" || !strings.Contains(fmt.Sprint(out["sandbox"]), "enforced:true") {
		t.Fatalf("spawn under workspace: %d %v", code, out)
	}
	s := h.attach(t, name, id)
	s.send(t, `{"input":"`+b64("touch ./t && echo in-$((1+1)); touch ../t || echo out-$((2+1))\n")+`"}`)
	s.waitFor(t, "in-2")
	s.waitFor(t, "out-3")
	s.send(t, `{"input":"`+b64("exit 0\n")+`"}`)
	_ = s.exitCode(t)
	if _, err := os.Stat(filepath.Join(h.work, "t")); err == nil {
		t.Fatal("the terminal wrote outside its cwd")
	}
}

// TestWorkspaceAtHomeRefused: a workspace whose cwd is the executor's root
// (the user's home) is refused, naming cwd, for exec, terminals and
// prompts; with --cwd . it wrote ~/.bashrc and ~/.ssh/authorized_keys.
func TestWorkspaceAtHomeRefused(t *testing.T) {
	h := startWith(t, nil, nil)
	name, _ := target(t)
	for path, body := range map[string]map[string]any{
		"exec":      {"argv": []string{"touch", ".bashrc"}, "cwd": ".", "sandbox": "workspace"},
		"terminals": {"cwd": "", "shell": "/bin/sh", "cols": 80, "rows": 24, "sandbox": "workspace"},
		"prompt":    {"agentic_tool": "claude-code", "prompt": "x", "cwd": ".", "sandbox": "workspace"},
	} {
		code, out := h.do(t, "POST", "/v1/executors/"+name+"/"+path, body)
		if code != 400 || !strings.Contains(fmt.Sprint(out), "invalid params: cwd:") || !strings.Contains(fmt.Sprint(out), "--cwd") {
			t.Errorf("%s: %d %v, want 400 naming cwd", path, code, out)
		}
	}
}

// refusedByKernel says whether a tool's output shows a write refused by
// the kernel: EACCES (Landlock) or EROFS (the read-only view of a
// namespace, which comes first where the executor can build one).
func refusedByKernel(out string) bool {
	out = strings.ToLower(out)
	return strings.Contains(out, "permission denied") || strings.Contains(out, "read-only file system")
}

// TestPromptGitHooksRefused: a hook a confined agent (Claude Code, its
// tool turn under workspace) tries to plant never lands: its view has the
// repository's hooks read-only (or, where no view can be built, the
// executor puts them back when the turn ends and says so), so the next
// unconfined git commit runs nothing.
func TestPromptGitHooksRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an agent CLI")
	}
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	home, err := os.MkdirTemp("", "agor-githooks-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	_ = os.Chmod(home, 0o777)
	const plant = `printf '#!/bin/sh\necho planted >> ~/.bashrc\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo planted || echo refused-by-kernel`
	c := agenttest.CasesRunning(t, home, 0, plant)[0] // claude-code
	h := startWith(t, func(string) string { return agentsYAML(c) }, nil)
	h.setCred(t, c.Cred, "sk-test-claude-9h0k")
	name, _ := target(t)
	hooks := filepath.Join(h.work, "proj", ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(h.work, "proj"), filepath.Join(h.work, "proj", ".git"), hooks} {
		_ = os.Chmod(d, 0o777)
	}
	lines := h.prompt(t, name, map[string]any{"agentic_tool": c.Tool, "prompt": c.ToolPrompt, "cwd": "proj",
		"permission_mode": "bypassPermissions", "timeout_ms": 120000, "sandbox": "workspace"})
	_, result := decisions(lines)
	if result == nil || result["status"] != "completed" || !strings.Contains(fmt.Sprint(lines), "planted") {
		t.Fatalf("the tool did not run: result %v; stream %v", result, lines)
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err == nil {
		t.Fatal("the planted hook is there")
	}
	view := strings.Contains(fmt.Sprint(result["sandbox"]), "view:namespace")
	switch {
	case view && !strings.Contains(fmt.Sprint(lines), "refused-by-kernel"):
		t.Errorf("the view did not refuse the hook: stream %v", lines)
	case !view && !strings.Contains(fmt.Sprint(result["warnings"]), ".git/hooks/pre-commit (added)"):
		t.Errorf("no view, and no put-back said: result warnings %v", result["warnings"])
	}
}

// plantCommand tries, from a confined agent's tool, to plant what an
// unconfined run would read later: Claude Code's settings (hooks), the
// npm cache; and writes its own confined state, which it may.
const plantCommand = `mkdir -p "$HOME/.claude" "$HOME/.npm" 2>/dev/null; ` +
	`echo '{"hooks":{}}' > "$HOME/.claude/settings.json"; echo x > "$HOME/.npm/planted"; echo x > "$CLAUDE_CONFIG_DIR/planted"; ` +
	`for f in "$HOME/.claude/settings.json" "$HOME/.npm/planted" "$CLAUDE_CONFIG_DIR/planted"; do ` +
	`[ -e "$f" ] && echo "written $f" || echo "denied $f"; done >> plant.log 2>/dev/null; true`

// TestConfinedAgentStateApart: a confined Claude Code keeps its state in
// a directory of its own (CLAUDE_CONFIG_DIR, the caches), so it cannot
// write the user's ~/.claude/settings.json (hooks the next unconfined
// prompt would run) or the npm cache, which it could at every level.
func TestConfinedAgentStateApart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an agent CLI")
	}
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	for _, level := range []string{"workspace", "read-only"} {
		t.Run(level, func(t *testing.T) {
			home, err := os.MkdirTemp("", "agor-plant-home")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(home) })
			_ = os.Chmod(home, 0o777)
			c := agenttest.CasesRunning(t, home, 0, plantCommand)[0] // claude-code
			h := startWith(t, func(string) string { return agentsYAML(c) }, nil)
			h.setCred(t, c.Cred, "sk-test-claude-p1nt")
			name, _ := target(t)
			proj := filepath.Join(h.work, "proj")
			if err := os.Mkdir(proj, 0o777); err != nil || os.Chmod(proj, 0o777) != nil {
				t.Fatal(err)
			}
			lines := h.prompt(t, name, map[string]any{"agentic_tool": c.Tool, "prompt": c.ToolPrompt, "cwd": "proj",
				"permission_mode": "bypassPermissions", "timeout_ms": 120000, "sandbox": level})
			if _, result := decisions(lines); result == nil || result["status"] != "completed" {
				t.Fatalf("result %v; stream %v", result, lines)
			}
			if _, err := os.Stat(filepath.Join(home, ".claude", "settings.json")); err == nil {
				t.Error("the confined agent wrote the user's ~/.claude/settings.json")
			}
			if _, err := os.Stat(filepath.Join(home, ".npm", "planted")); err == nil {
				t.Error("the confined agent wrote the user's npm cache")
			}
			if level == "workspace" { // read-only: the log itself cannot be written in the cwd
				log, _ := os.ReadFile(filepath.Join(proj, "plant.log"))
				for _, want := range []string{"denied " + home + "/.claude/settings.json", "denied " + home + "/.npm/planted"} {
					if !strings.Contains(string(log), want) {
						t.Errorf("no %q in %q", want, log)
					}
				}
				// The workspace's own state: its name and a hash of its path.
				own := regexp.MustCompile("written " + regexp.QuoteMeta(home+"/.local/state/agor/confined/proj-") + "[0-9a-f]{16}/claude-code/.claude/planted")
				if !own.Match(log) {
					t.Errorf("no %q in %q", own, log)
				}
			}
		})
	}
}

// TestConfinedCallerRefused: with sandbox.unix_sockets on, a confined
// exec reaches the daemon's socket, and the daemon still refuses to do
// anything for it (here, an unconfined exec writing outside the
// workspace); the same request from unconfined work is served.
func TestConfinedCallerRefused(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	h := startWith(t, nil, func(c *config.Config) { c.Sandbox.UnixSockets = true })
	if err := os.Chmod(h.sock, 0o666); err != nil {
		t.Fatal(err)
	}
	name, _ := target(t)
	proj := filepath.Join(h.work, "proj")
	if err := os.Mkdir(proj, 0o777); err != nil || os.Chmod(proj, 0o777) != nil {
		t.Fatal(err)
	}
	escaped := filepath.Join(h.work, "escaped")
	ask := fmt.Sprintf(`{"argv":["touch",%q],"cwd":".","sandbox":"off"}`, escaped)
	curl := []string{"curl", "-s", "--unix-socket", h.sock, "-X", "POST", "-d", ask, "http://agor/v1/executors/" + name + "/exec"}
	for _, level := range []string{"workspace", "off"} {
		code, out := h.do(t, "POST", "/v1/executors/"+name+"/exec", map[string]any{"argv": curl, "cwd": "proj", "sandbox": level})
		_, err := os.Stat(escaped)
		switch {
		case code != 200:
			t.Fatalf("%s: the outer exec: %d %v", level, code, out)
		case level == "workspace" && (err == nil || !strings.Contains(fmt.Sprint(out["stdout"]), "confined_caller")):
			t.Fatalf("from a confined exec: %v (escaped file: %v)", out["stdout"], err)
		case level == "off" && err != nil:
			t.Fatalf("from unconfined work the request was not served: %v", out["stdout"])
		}
	}
}

// TestConfinedTCPCallerRefused: a bearer token carries no process, so the
// daemon finds the client's socket in the kernel's table and asks its
// owner's executor who holds it. A confined exec that asks over loopback
// TCP for an unconfined one gets nothing done, nor when it closes the
// connection right after sending; unconfined, the same request is served.
func TestConfinedTCPCallerRefused(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	name, _ := target(t)
	tokens := filepath.Join(t.TempDir(), "api-tokens")
	const tok = "tok-confined-0123456789abcdef0123456789"
	if err := os.WriteFile(tokens, []byte(name+" "+apiwire.HashToken(tok)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startWith(t, nil, func(c *config.Config) { c.API.TCPAddress = "127.0.0.1:0"; c.API.TokensFile = tokens })
	proj := filepath.Join(h.work, "proj")
	if err := os.Mkdir(proj, 0o777); err != nil || os.Chmod(proj, 0o777) != nil {
		t.Fatal(err)
	}
	escaped := filepath.Join(h.work, "escaped-tcp")
	body := fmt.Sprintf(`{"argv":["touch",%q],"cwd":".","sandbox":"off"}`, escaped)
	port := h.d.TCPAddr().(*net.TCPAddr).Port
	send := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf 'POST /v1/executors/%s/exec HTTP/1.0\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%%s' '%s' >&3`,
		port, name, tok, len(body), body)
	for _, c := range []struct {
		level, then string
		served      bool
	}{
		{"workspace", "; cat <&3", false},
		{"workspace", "; exec 3>&-; sleep 1", false},
		{"off", "; cat <&3", true},
	} {
		code, out := h.do(t, "POST", "/v1/executors/"+name+"/exec", map[string]any{
			"argv": []string{"bash", "-c", send + c.then}, "cwd": "proj", "sandbox": c.level})
		time.Sleep(200 * time.Millisecond) // a request sent and left may still be served
		_, err := os.Stat(escaped)
		switch {
		case code != 200:
			t.Fatalf("%s%s: the outer exec: %d %v", c.level, c.then, code, out)
		case !c.served && err == nil:
			t.Fatalf("%s%s: the daemon served a confined caller over TCP: %v", c.level, c.then, out["stdout"])
		case !c.served && c.then == "; cat <&3" && !strings.Contains(fmt.Sprint(out["stdout"]), "confined_caller"):
			t.Errorf("%s: refused without confined_caller: %v", c.level, out["stdout"])
		case c.served && err != nil:
			t.Fatalf("unconfined, the request was not served: %v %v", out["stdout"], out["stderr"])
		}
	}
}

// TestPromptsDefaultWorkspace: under sandbox.prompts: workspace (the
// packaged configuration) an agent's prompt that names no level is
// confined to its cwd (the agent's own write outside is refused by the
// kernel) and one without a project cwd is refused naming cwd; the
// person's own exec still gets sandbox.default (off).
func TestPromptsDefaultWorkspace(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	dir, err := os.MkdirTemp("", "agor-prompts-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	agent := filepath.Join(dir, "claude")
	write(t, agent, `#!/bin/sh
read -r init; read -r turn
echo '{"type":"system","subtype":"init","session_id":"p-1"}'
touch inside.txt; touch ../outside.txt
echo '{"type":"result","subtype":"success","session_id":"p-1","usage":{"input_tokens":1,"output_tokens":1}}'
while read -r line; do :; done
`, 0o755)
	home := filepath.Join(dir, "home") // the confined agent's state is kept there
	if err := os.Mkdir(home, 0o777); err != nil || os.Chmod(home, 0o777) != nil {
		t.Fatal(err)
	}
	h := startWith(t, func(string) string { return "claude-code:\n  binary: " + agent + "\n  env:\n    HOME: " + home + "\n" },
		func(c *config.Config) { c.Sandbox.Prompts = "workspace" })
	h.setCred(t, "ANTHROPIC_API_KEY", "sk-test-prompts-0default")
	name, _ := target(t)
	proj := filepath.Join(h.work, "proj")
	if err := os.Mkdir(proj, 0o777); err != nil || os.Chmod(proj, 0o777) != nil {
		t.Fatal(err)
	}
	body := func(cwd string) map[string]any {
		return map[string]any{"agentic_tool": "claude-code", "prompt": "go", "cwd": cwd, "permission_mode": "bypassPermissions", "timeout_ms": 60000}
	}
	if code, out := h.do(t, "POST", "/v1/executors/"+name+"/prompt", body(".")); code != 400 || !strings.Contains(fmt.Sprint(out), "cwd") {
		t.Errorf("a prompt at the home under the workspace default: %d %v, want 400 naming cwd", code, out)
	}
	lines := h.prompt(t, name, body("proj"))
	_, result := decisions(lines)
	if result == nil || result["status"] != "completed" || !strings.Contains(fmt.Sprint(result["sandbox"]), "level:workspace") {
		t.Fatalf("the confined prompt: result %v", result)
	}
	if _, err := os.Stat(filepath.Join(proj, "inside.txt")); err != nil {
		t.Errorf("inside its cwd: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.work, "outside.txt")); err == nil {
		t.Error("the prompt, confined by the default, wrote outside its cwd")
	}
	code, out := h.do(t, "POST", "/v1/executors/"+name+"/exec", map[string]any{"argv": []string{"touch", "own.txt"}, "cwd": "."})
	if _, err := os.Stat(filepath.Join(h.work, "own.txt")); code != 200 || err != nil {
		t.Errorf("the person's own exec at home: %d %v (%v)", code, out, err)
	}
}
