package doctor

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
)

// checkGateway says where model keys go: with the gateway off, each
// agent is handed its key and can read it (and so can its person); on,
// keys stay in the daemon and its socket must be there for any task to
// reach a model.
func checkGateway(_ context.Context, d *Doctor) Finding {
	if d.cfg == nil {
		return skip("no configuration read")
	}
	g := d.cfg.Gateway
	if !g.Enabled {
		return warn("model gateway off (gateway.enabled: false): each agent is handed its API key just in time and can read it, " +
			"and model usage is only what each CLI reports (the default, true, keeps ANTHROPIC_API_KEY, OPENAI_API_KEY and GEMINI_API_KEY in the daemon, and meters them)")
	}
	fi, err := os.Stat(d.path(g.SocketPath))
	if err == nil && fi.Mode()&os.ModeSocket == 0 {
		err = errors.New("not a socket")
	}
	if err != nil {
		return fail("systemctl restart agor-daemon.socket agor-daemon.service (agor-daemon.socket listens on it)",
			"model gateway on, but %s: %v: no task reaches a model", g.SocketPath, err)
	}
	var ups []string
	for _, k := range slices.Sorted(maps.Keys(g.Upstreams)) {
		ups = append(ups, k+" "+g.Upstreams[k])
	}
	direct := "none"
	if len(g.DirectAgents) > 0 {
		direct = strings.Join(g.DirectAgents, ", ") + " (handed their keys just in time)"
	}
	return ok("model gateway on at %s: agents get a session token, keys stay in the daemon; upstreams %s; "+
		"agents that go around it (gateway.direct_agents): %s; other credentials are still handed to agents just in time",
		g.SocketPath, strings.Join(ups, ", "), direct)
}
