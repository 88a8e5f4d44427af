package task

import (
	"bufio"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// baseVars are the variables agenttest points each CLI at its stand-in
// with: the gateway's stand-in relays there.
var baseVars = map[string]string{"claude-code": "ANTHROPIC_BASE_URL", "codex": "AGOR_CODEX_BASE_URL",
	"gemini": "GOOGLE_GEMINI_BASE_URL", "opencode": "AGOR_OPENCODE_BASE_URL"}

// gatewayFor stands in for the daemon's gateway socket: each connection,
// its door line taken off, is relayed to c's stand-in model, as the
// gateway passes a running task's requests on. (The credential's check
// is the daemon's, tested there.)
func gatewayFor(tb testing.TB, c agenttest.Case) string {
	u, err := url.Parse(c.Env[baseVars[c.Tool]])
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "agor-gw") // a Unix socket's path is short
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "gateway.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close(); os.RemoveAll(dir) })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go relayTo(in, u.Host)
		}
	}()
	return sock
}

// relayTo copies in (after its door line) to and from addr until either
// end closes.
func relayTo(in net.Conn, addr string) {
	defer in.Close()
	r := bufio.NewReader(in)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "AGOR-GATEWAY-TASK ") {
		return // the relay's door let in none of a task's connections
	}
	out, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer out.Close()
	go func() { _, _ = io.Copy(out, r); out.Close() }()
	_, _ = io.Copy(in, out)
}

// prewarmParams are prewarm_agent's for the rig's session s.
func (r *realRig) prewarmParams(session string) map[string]any {
	return map[string]any{"session_id": session, "agentic_tool": r.c.Tool, "cwd": "work",
		"permission_mode": "default", "gateway": true, "gateway_token": "agor-gw2.t1." + session + ".1001.test"}
}

// For each real CLI: a pre-warmed agent sends the model nothing before
// its prompt (its handshake done, and then some), then takes the
// prompt: prewarmed, completed; the follow-up runs warm on it.
func TestPrewarmRealAgents(t *testing.T) {
	home := agentHome(t)
	script := []modeltest.AnthTurn{{Text: "Noted."}, {Text: "It was heron-5."}}
	for _, c := range agenttest.CasesScripted(t, home, agenttest.Command, script...) {
		t.Run(c.Tool, func(t *testing.T) {
			r := newRealRig(t, c, true)
			r.svc.GatewaySocket = gatewayFor(t, c)
			r.svc.Warm.PrewarmIdle = time.Minute
			pre := r.prewarm(r.prewarmParams("s1"))
			if !pre.Started {
				t.Fatalf("prewarm_agent: %+v", pre)
			}
			pid := r.warmPid("s1")
			waitHandshake(r.warm("s1"))
			time.Sleep(time.Second) // a person typing: still nothing may reach the model
			if n := c.Requests(); n != 0 {
				t.Fatalf("%d model requests before the prompt", n)
			}
			p := r.params("s1", "remember the word heron-5", "default")
			p["gateway_token"] = r.prewarmParams("s1")["gateway_token"]
			res := r.call(p)
			if res.Status != "completed" || !res.Prewarmed || res.Warm || r.warmPid("s1") != pid {
				t.Fatalf("first prompt: %+v on %d, want completed, prewarmed, on %d", res, r.warmPid("s1"), pid)
			}
			p = r.params("s1", "which word did I give you?", "default")
			p["gateway_token"] = r.prewarmParams("s1")["gateway_token"]
			if res := r.call(p); res.Status != "completed" || !res.Warm || res.Prewarmed {
				t.Fatalf("follow-up: %+v", res)
			}
			r.sawTogether("heron-5", "which word did I give you?")
		})
	}
}

// waitHandshake waits for l's handshake where it can be told, else a
// Claude Code's (up to about a second on this host, answered unread).
func waitHandshake(l agent.Live) {
	if ready := agent.Ready(l); ready != nil {
		<-ready
		return
	}
	time.Sleep(2 * time.Second)
}
