package logging

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestFieldName(t *testing.T) {
	for in, want := range map[string]string{
		"user":        "AGOR_USER",
		"peer_uid":    "AGOR_PEER_UID",
		"method":      "AGOR_METHOD",
		"duration-ms": "AGOR_DURATION_MS",
		"a.b":         "AGOR_A_B",
		"Ünï":         "AGOR__N_",
	} {
		if got := FieldName(in); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAddFieldFlattensGroups(t *testing.T) {
	vars := map[string]string{}
	addField(vars, "", slog.Group("peer", slog.Int("uid", 1000), slog.Int("pid", 7)))
	addField(vars, "", slog.String("user", "alice"))
	want := map[string]string{"AGOR_PEER_UID": "1000", "AGOR_PEER_PID": "7", "AGOR_USER": "alice"}
	for k, v := range want {
		if vars[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, vars[k], v, vars)
		}
	}
}

func TestTextFormatOutsideJournal(t *testing.T) {
	t.Setenv("JOURNAL_STREAM", "")
	var buf bytes.Buffer
	New("test", Auto, slog.LevelInfo, &buf).With("user", "bob").Info("hello", "method", "ping")
	line := buf.String()
	for _, want := range []string{"msg=hello", "user=bob", "method=ping", "time="} {
		if !strings.Contains(line, want) {
			t.Errorf("text line %q lacks %q", line, want)
		}
	}
}

func TestParse(t *testing.T) {
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat accepted xml")
	}
	if _, err := ParseLevel("loud"); err == nil {
		t.Error("ParseLevel accepted loud")
	}
	if l, err := ParseLevel("warn"); err != nil || l != slog.LevelWarn {
		t.Errorf("ParseLevel(warn) = %v, %v", l, err)
	}
}
