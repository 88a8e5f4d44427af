package config

import (
	"strings"
	"testing"
)

func TestAgentsSection(t *testing.T) {
	c, err := Parse(strings.NewReader(""))
	if err != nil || c.Agents != DefaultAgents() {
		t.Fatalf("defaults: %+v, %v", c.Agents, err)
	}
	c, err = Parse(strings.NewReader("agents:\n  warm_idle_ms: 0\n  warm_per_user: 2\n  warm_per_host: 0\n"))
	if err != nil || c.Agents.WarmIdleMS != 0 || c.Agents.WarmPerUser != 2 || c.Agents.WarmPerHost != 0 || c.Agents.WarmMemoryBytes != DefaultAgents().WarmMemoryBytes {
		t.Fatalf("set: %+v, %v", c.Agents, err)
	}
	for _, tc := range []struct{ yaml, err string }{
		{"agents:\n  warm_per_user: -1\n", "agents.warm_per_user: must not be negative"},
		{"agents:\n  warm_memory_bytes: -5\n", "agents.warm_memory_bytes"},
		{"agents:\n  warm_per_host: -1\n", "agents.warm_per_host: must not be negative"},
		{"agents:\n  warm_idle: 5\n", "unknown key warm_idle"},
	} {
		if _, err := Parse(strings.NewReader(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.err)
		}
	}
}
