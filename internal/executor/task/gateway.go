package task

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/door"
	"github.com/agor-sh/agor/internal/executor/egress"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// gatewayRelay is this executor's loopback port to the daemon's model
// gateway: bytes relayed untouched to its Unix socket, where the daemon
// knows this executor's person by SO_PEERCRED and the task by the
// credential the relay puts first on each connection. Its door lets in
// only the connections of a running task's processes, found by the
// kernel (internal/executor/door): the agent holds a placeholder, which
// names nothing. Started with the first task that uses it.
type gatewayRelay struct {
	once sync.Once
	base string // http://127.0.0.1:PORT
	err  error
	stop func()
	door *door.Door

	mu   sync.Mutex
	conn *rpc.Conn // the daemon's, the last prompt's: where refusals are told
}

func (g *gatewayRelay) start(socket string, log *slog.Logger) (string, error) {
	g.once.Do(func() {
		if socket == "" {
			g.err = fmt.Errorf("this executor was started without --gateway-socket")
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			g.err = err
			return
		}
		g.door = &door.Door{UID: uint32(os.Getuid()), Notify: g.notify, Log: log}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := (&egress.Relay{Socket: socket, Log: log, Door: g.door}).Serve(ctx, ln); err != nil {
				log.Error("gateway relay stopped", "err", err)
			}
		}()
		g.base, g.stop = "http://"+ln.Addr().String(), func() { cancel(); <-done; g.door.Close() }
		log.Info("gateway relay served", "address", ln.Addr().String(), "gateway_socket", socket)
	})
	return g.base, g.err
}

func (g *gatewayRelay) close() {
	g.once.Do(func() {}) // none starts after this
	if g.stop != nil {
		g.stop()
	}
}

// open lets p's task in at the relay's door with its credential, for as
// long as the turn runs (Close); nil without the gateway. Its agent's
// process is named by the Turn's Started.
func (g *gatewayRelay) open(p protocol.ExecutePromptParams) *door.Turn {
	if p.GatewayToken == "" || g.door == nil {
		return nil
	}
	return g.door.Open(p.TaskID, p.GatewayToken)
}

// to tells the door's refusals on conn from now on (prompts come from
// the daemon).
func (g *gatewayRelay) to(conn *rpc.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conn = conn
}

// notify tells the daemon what the door refused (gateway_refused), on
// the connection the last prompt came on; best effort.
func (g *gatewayRelay) notify(p protocol.GatewayRefusedParams) {
	g.mu.Lock()
	conn := g.conn
	g.mu.Unlock()
	if conn != nil {
		_ = conn.Notify(protocol.MethodGatewayRefused, p)
	}
}

// creds are what an agent authenticates with.
type creds struct {
	key     string            // the key, or the gateway's placeholder
	env     map[string]string // the relay's address over agents.yaml's; nil without the gateway
	gateway bool
}

// credentials are what the agent authenticates with: behind the gateway
// the placeholder and the relay's address in place of the provider's
// (variables set over agents.yaml's), and no key is asked for; otherwise
// the key, fetched just in time. A pre-warm is always behind it.
func (s *Service) credentials(ctx context.Context, h *host, gateway bool, a agent.Adapter, tool string) (creds, error) {
	if !gateway {
		key, err := h.apiKey(ctx, a.CredentialKey())
		return creds{key: key}, err
	}
	base, err := s.gw.start(s.GatewaySocket, s.log())
	if err != nil {
		return creds{}, fmt.Errorf("the model gateway: %w", err)
	}
	return creds{key: protocol.GatewayPlaceholder, env: gatewayEnv(tool, base), gateway: true}, nil
}

// gatewayEnv points tool's CLI at base: each at the path its requests
// expect below it (the OpenAI clients' base includes /v1).
func gatewayEnv(tool, base string) map[string]string {
	switch tool {
	case protocol.ToolClaudeCode:
		return map[string]string{"ANTHROPIC_BASE_URL": base}
	case protocol.ToolCodex:
		return map[string]string{agent.CodexBaseURLEnv: base + "/v1"}
	case protocol.ToolGemini:
		return map[string]string{"GOOGLE_GEMINI_BASE_URL": base}
	case protocol.ToolOpenCode:
		return map[string]string{agent.OpencodeBaseURLEnv: base + "/v1"}
	}
	return nil
}

// ownSignIn keeps a person's own subscription: under the gateway, an
// agent whose person signed in with her own account (Claude Code's OAuth
// credentials, or Codex's ChatGPT sign-in, in the agent's config
// directory) keeps using that sign-in. The key variable goes, so the CLI
// sends her credentials, and the base URL's path says so
// (gateway.OwnPrefix, then the placeholder): the gateway knows the task
// by the relay's door line as for any request, passes her credentials
// through untouched and meters the request. The daemon never sees her
// credentials' file.
func ownSignIn(tool string, gateway bool, env []string) []string {
	if !gateway {
		return env
	}
	own := ownPrefix + protocol.GatewayPlaceholder
	switch {
	case tool == protocol.ToolClaudeCode && claudeSignedIn(env):
		return rewriteEnv(env, "ANTHROPIC_BASE_URL", own, nil, "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
	case tool == protocol.ToolCodex && codexSignedIn(env):
		return rewriteEnv(env, agent.CodexBaseURLEnv, own+"/chatgpt",
			[]string{agent.CodexSignInEnv + "=chatgpt"}, "OPENAI_API_KEY")
	}
	return env
}

// rewriteEnv drops the variables drop, points base (the relay's URL) at
// path below the relay's root, and adds add.
func rewriteEnv(env []string, base, path string, add []string, drop ...string) []string {
	out := make([]string, 0, len(env)+len(add))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case slices.Contains(drop, k):
			continue
		case k == base:
			u, err := url.Parse(v)
			if err != nil {
				continue
			}
			u.Path = path
			kv = k + "=" + u.String()
		}
		out = append(out, kv)
	}
	return append(out, add...)
}

// ownPrefix is gateway.OwnPrefix (the executor does not import the
// daemon's packages).
const ownPrefix = "/own/"

// claudeSignedIn: Claude Code's OAuth credentials, as it stores them on
// Linux ($CLAUDE_CONFIG_DIR, else ~/.claude, /.credentials.json), hold
// an access token.
func claudeSignedIn(env []string) bool {
	dir := agent.Getenv(env, "CLAUDE_CONFIG_DIR")
	if home := agent.Getenv(env, "HOME"); dir == "" && home != "" {
		dir = filepath.Join(home, ".claude")
	}
	var c struct {
		OAuth struct {
			AccessToken string `json:"accessToken"`
		} `json:"claudeAiOauth"`
	}
	return dir != "" && readJSON(filepath.Join(dir, ".credentials.json"), &c) && c.OAuth.AccessToken != ""
}

// codexSignedIn: Codex's auth.json ($CODEX_HOME, else ~/.codex) holds a
// ChatGPT sign-in's tokens, and no API key of its own.
func codexSignedIn(env []string) bool {
	dir := agent.Getenv(env, "CODEX_HOME")
	if home := agent.Getenv(env, "HOME"); dir == "" && home != "" {
		dir = filepath.Join(home, ".codex")
	}
	var c struct {
		Key    *string `json:"OPENAI_API_KEY"`
		Tokens struct {
			AccessToken string `json:"access_token"`
		} `json:"tokens"`
	}
	return dir != "" && readJSON(filepath.Join(dir, "auth.json"), &c) && c.Tokens.AccessToken != "" && (c.Key == nil || *c.Key == "")
}

// readJSON decodes the file at path into v (at most 1 MiB of it).
func readJSON(path string, v any) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(v) == nil
}
