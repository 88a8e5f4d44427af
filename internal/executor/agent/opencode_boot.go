package agent

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// opencodeBootWait bounds opencodeBoot.
const opencodeBootWait = 10 * time.Second

// opencodeBoot starts, for a pre-warmed opencode, what its first
// session/prompt would otherwise start: opencode 1.18 builds its services
// for a directory (file watcher and finder, its plugins' catalog
// transforms, agents and commands) when a prompt or a file request first
// names that directory, not at session/new, and ACP has no call that
// does. So, once the session is open, the executor asks the agent's own
// HTTP server (127.0.0.1, behind the password opencodeLockServer gave it)
// to list the cwd, as opencode's file API does: no model request, nothing
// of the conversation. A failure only leaves the work to the prompt.
func opencodeBoot(ctx context.Context, p *Proc, req Request) {
	ctx, cancel := context.WithTimeout(ctx, opencodeBootWait)
	defer cancel()
	user := Getenv(req.Env, "OPENCODE_SERVER_USERNAME")
	if user == "" {
		user = "opencode"
	}
	q := url.Values{"directory": {req.Cwd}, "path": {"."}}
	for _, port := range p.ListenPorts() {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/file?"+q.Encode(), nil)
		if err != nil {
			return
		}
		r.SetBasicAuth(user, Getenv(req.Env, "OPENCODE_SERVER_PASSWORD"))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			slog.Debug("opencode: directory services not started ahead", "port", port, "err", err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
	}
}
