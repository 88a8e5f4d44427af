package flagenv

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestApply(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	idle := fs.Duration("idle-timeout", time.Minute, "")
	user := fs.String("daemon-user", "agor", "")
	t.Setenv("X_IDLE_TIMEOUT", "5s")
	t.Setenv("X_DAEMON_USER", "fromenv")
	if err := Apply(fs, "X"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--daemon-user", "fromflag"}); err != nil {
		t.Fatal(err)
	}
	if *idle != 5*time.Second || *user != "fromflag" {
		t.Fatalf("idle %v user %q: environment not applied or flag did not win", *idle, *user)
	}
}

func TestApplyNamesBadVariable(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Duration("idle-timeout", time.Minute, "")
	t.Setenv("X_IDLE_TIMEOUT", "soon")
	err := Apply(fs, "X")
	if err == nil || !strings.Contains(err.Error(), "X_IDLE_TIMEOUT") {
		t.Fatalf("Apply = %v, want an error naming X_IDLE_TIMEOUT", err)
	}
}
