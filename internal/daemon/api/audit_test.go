package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/daemon/audit"
)

// TestAuditViewsJSON: a record as GET /v1/audit shows it (apiwire's type)
// is the JSON the trail writes for it (audit.Record's own).
func TestAuditViewsJSON(t *testing.T) {
	at := time.Date(2025, 11, 23, 10, 4, 5, 6, time.UTC)
	recs := []audit.Record{
		{Time: at, Action: audit.AccountMismatch, User: "alice", UID: audit.UIDOf(1001), StoredUID: audit.UIDOf(0), Session: "s1"},
		{Time: at, Action: audit.Egress, User: "bob", Host: "example.org", Port: 443, Address: "192.0.2.1:443", Decision: "allowed", BytesUp: 1, BytesDown: 2},
		{Time: at, Action: audit.FileWritten, Path: "a.txt", Bytes: 5, Credential: "K", Tool: "codex", Mode: "plan", Sandbox: "workspace", Reason: "r", Task: "t", Count: 3},
		{Time: at, Action: audit.AccountPurged, StoredUID: audit.StoredUID(-1)},
	}
	want, _ := json.Marshal(recs)
	got, _ := json.Marshal(auditViews(recs))
	if string(got) != string(want) {
		t.Errorf("views:\n%s\nwant\n%s", got, want)
	}
	if got, _ := json.Marshal(auditViews(nil)); string(got) != "null" {
		t.Errorf("no records: %s, want null", got)
	}
}
