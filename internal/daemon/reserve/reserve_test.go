package reserve

import (
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// A reservation of alice's is claimed only by a new session of alice's
// (same uid) with exactly its options, environment included, once,
// before it expires.
func TestPrewarmReservation(t *testing.T) {
	t.Parallel()
	base := apiwire.PromptBody{Tool: "codex", Cwd: "src", PermissionMode: "default", Model: "m1", Sandbox: "workspace"}
	with := func(f func(*apiwire.PromptBody)) apiwire.PromptBody { b := base; f(&b); return b }
	now := time.Unix(1_800_000_000, 0)
	others := []struct {
		name   string
		person string
		uid    uint32
		body   apiwire.PromptBody
	}{
		{"bob, same options", "bob", 1002, base},
		{"alice, another uid", "alice", 1003, base},
		{"another cwd", "alice", 1001, with(func(b *apiwire.PromptBody) { b.Cwd = "src/x" })},
		{"another sandbox level", "alice", 1001, with(func(b *apiwire.PromptBody) { b.Sandbox = "off" })},
		{"another mode", "alice", 1001, with(func(b *apiwire.PromptBody) { b.PermissionMode = "plan" })},
		{"another model", "alice", 1001, with(func(b *apiwire.PromptBody) { b.Model = "" })},
		{"another tool", "alice", 1001, with(func(b *apiwire.PromptBody) { b.Tool = "gemini" })},
		{"an environment", "alice", 1001, with(func(b *apiwire.PromptBody) { b.Environment = "py" })},
	}
	var r Table
	id := r.Reserve(Key("alice", 1001, base), time.Minute, now)
	if again := r.Reserve(Key("alice", 1001, base), time.Minute, now.Add(time.Second)); again != id || id == "" {
		t.Fatalf("a second pre-warm of the same options reserved %q, then %q", id, again)
	}
	for _, o := range others {
		if got := r.Claim(Key(o.person, o.uid, o.body), now.Add(2*time.Second)); got != "" {
			t.Errorf("%s claimed alice's reservation %q", o.name, got)
		}
	}
	if got := r.Claim(Key("alice", 1001, base), now.Add(2*time.Second)); got != id {
		t.Fatalf("alice's matching session got %q, want %q", got, id)
	}
	if got := r.Claim(Key("alice", 1001, base), now.Add(3*time.Second)); got != "" {
		t.Fatalf("claimed twice: %q", got)
	}
	r.Reserve(Key("alice", 1001, base), time.Minute, now)
	if got := r.Claim(Key("alice", 1001, base), now.Add(time.Minute)); got != "" {
		t.Fatalf("an expired reservation was claimed: %q", got)
	}
}

// The table stays bounded, the soonest to expire making room.
func TestReservationsBounded(t *testing.T) {
	t.Parallel()
	var r Table
	now := time.Unix(1_800_000_000, 0)
	for i := range maxReservations + 10 {
		r.Reserve(Key("alice", uint32(i), apiwire.PromptBody{}), time.Hour+time.Duration(i)*time.Second, now)
	}
	if n := len(r.by); n > maxReservations {
		t.Fatalf("%d reservations kept", n)
	}
	if r.Claim(Key("alice", 0, apiwire.PromptBody{}), now) != "" {
		t.Fatal("the soonest to expire was kept")
	}
}
