package config

import (
	"strings"
	"testing"
)

func TestQuotasAndRetention(t *testing.T) {
	c, err := Parse(strings.NewReader("quotas:\n  max_sessions_per_user: 5\nretention:\n  event_max_age_days: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Quotas.MaxSessionsPerUser != 5 || c.Quotas.MaxPromptBytes != 1<<20 || c.Retention.EventMaxAgeDays != 0 || c.Retention.TaskMaxAgeDays != 30 ||
		c.Store.MinFreeBytes != 64<<20 {
		t.Fatalf("parsed %+v %+v", c.Quotas, c.Retention)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"quotas:\n  max_sessions_per_user: 0\n", "quotas.max_sessions_per_user: must be positive"},
		{"quotas:\n  max_prompt_bytes: -1\n", "quotas.max_prompt_bytes: must be positive"},
		{"quotas:\n  max_prompt_bytes: 2000000000\n", "quotas.max_prompt_bytes: at most 1 GiB"},
		{"quotas:\n  max_event_streams: 3\n", "unknown key max_event_streams"},
		{"quotas:\n  max_event_bytes_per_task: 0\n", "quotas.max_event_bytes_per_task: must be positive"},
		{"quotas:\n  max_event_bytes_per_user: -5\n", "quotas.max_event_bytes_per_user: must be positive"},
		{"quotas:\n  event_quota_action: pause\n", `quotas.event_quota_action: "pause" is neither`},
		{"retention:\n  store_max_bytes: -1\n", "retention.store_max_bytes: must be 0 (no bound) or positive"},
		{"retention:\n  sweep_interval_s: 0\n", "retention.sweep_interval_s: must be positive"},
		{"store:\n  min_free_bytes: -1\n", "store.min_free_bytes: must be 0 (no floor) or positive"},
		{"store:\n  min_free: 5\n", "unknown key min_free"},
	} {
		_, err := Parse(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
}
