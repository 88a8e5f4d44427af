package store

import (
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/google/go-cmp/cmp"
)

func audit0() audit.Filter { return audit.Filter{} }

func TestAudit(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	base := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	recs := []audit.Record{
		{Time: base, Action: audit.TaskStarted, User: "alice", Session: "s1", Task: "t1", Tool: "claude-code"},
		{Time: base.Add(time.Second), Action: audit.APIKeyIssued, User: "alice", Task: "t1", Credential: "anthropic"},
		{Time: base.Add(2 * time.Second), Action: audit.APIKeyRefused, User: "bob", Task: "t2", Reason: "expired", Count: 3},
		{Time: base.Add(3 * time.Second), Action: audit.PermissionDecided, User: "alice", Task: "t1", Mode: "ask", Decision: "allow"},
		{Time: base.Add(4 * time.Second), Action: audit.TaskEnded, User: "alice", Task: "t1"},
	}
	for _, r := range recs {
		if err := db.AppendAudit(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		f    audit.Filter
		want []audit.Record
	}{
		{"all", audit.Filter{}, recs},
		{"user", audit.Filter{User: "bob"}, recs[2:3]},
		{"task", audit.Filter{Task: "t1"}, []audit.Record{recs[0], recs[1], recs[3], recs[4]}},
		{"action", audit.Filter{Action: audit.TaskEnded}, recs[4:]},
		{"since", audit.Filter{Since: base.Add(3 * time.Second)}, recs[3:]},
		{"newest two, oldest first", audit.Filter{User: "alice", Limit: 2}, []audit.Record{recs[3], recs[4]}},
		{"none", audit.Filter{User: "carol"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.QueryAudit(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("QueryAudit (-want +got):\n%s", d)
			}
		})
	}
	if err := db.AppendAudit(audit.Record{Action: audit.RateLimited}); err != nil {
		t.Fatal(err)
	}
	got, _ := db.QueryAudit(audit.Filter{Action: audit.RateLimited})
	if len(got) != 1 || got[0].Time.IsZero() {
		t.Errorf("record without time: %+v", got)
	}
}
