package identity

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// varlinkServer answers userdb requests from a table, the way
// systemd-userdbd's multiplexer does (records, memberships streamed with
// "continues", NoRecordFound). The real one runs in the systemd suite.
func varlinkServer(t *testing.T, answer func(method string, params map[string]any) []string) string {
	sock := filepath.Join(t.TempDir(), "userdb")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadBytes(0)
				if err != nil {
					return
				}
				var req struct {
					Method     string         `json:"method"`
					Parameters map[string]any `json:"parameters"`
				}
				if json.Unmarshal(line[:len(line)-1], &req) != nil {
					return
				}
				for _, rep := range answer(req.Method, req.Parameters) {
					_, _ = c.Write(append([]byte(rep), 0))
				}
			}()
		}
	}()
	return sock
}

func TestUserdb(t *testing.T) {
	sock := varlinkServer(t, func(method string, p map[string]any) []string {
		if p["service"] != "io.systemd.Multiplexer" {
			return []string{`{"error":"io.systemd.UserDatabase.BadService"}`}
		}
		switch {
		case method == "io.systemd.UserDatabase.GetUserRecord" && (p["userName"] == "ada.lovelace" || p["uid"] == float64(20001)):
			return []string{`{"parameters":{"record":{"userName":"ada.lovelace","uid":20001,"gid":20001,"homeDirectory":"/home/ada.lovelace","shell":"/bin/bash"},"incomplete":false}}`}
		case method == "io.systemd.UserDatabase.GetMemberships":
			return []string{`{"parameters":{"userName":"ada.lovelace","groupName":"engineers"},"continues":true}`,
				`{"parameters":{"userName":"ada.lovelace","groupName":"gone"},"continues":true}`,
				`{"parameters":{"userName":"ada.lovelace","groupName":"analysts"}}`}
		case method == "io.systemd.UserDatabase.GetGroupRecord" && p["groupName"] == "engineers":
			return []string{`{"parameters":{"record":{"groupName":"engineers","gid":30000}}}`}
		case method == "io.systemd.UserDatabase.GetGroupRecord" && p["gid"] == float64(20001):
			return []string{`{"parameters":{"record":{"groupName":"ada.lovelace","gid":20001}}}`}
		case method == "io.systemd.UserDatabase.GetGroupRecord" && p["groupName"] == "analysts":
			return []string{`{"parameters":{"record":{"groupName":"analysts","gid":30001}}}`}
		case method == "io.systemd.UserDatabase.GetUserRecord" && p["userName"] == "broken":
			return []string{`{"parameters":{"record":{"userName":"broken"}}}`}
		}
		return []string{`{"error":"io.systemd.UserDatabase.NoRecordFound"}`}
	})
	r := New(Userdb{Socket: sock})
	ctx := context.Background()
	u, err := r.LookupName(ctx, "ada.lovelace")
	want := User{Name: "ada.lovelace", UID: 20001, GID: 20001, Home: "/home/ada.lovelace", Shell: "/bin/bash"}
	if err != nil || u != want {
		t.Fatalf("LookupName = %+v, %v", u, err)
	}
	if byUID, err := r.LookupUID(ctx, 20001); err != nil || byUID != want {
		t.Fatalf("LookupUID = %+v, %v", byUID, err)
	}
	if ids, err := r.GroupIDs(ctx, u); err != nil || len(ids) != 3 || ids[1] != 30000 || ids[2] != 30001 {
		t.Fatalf("GroupIDs = %v, %v", ids, err)
	}
	if g, err := r.LookupGID(ctx, 20001); err != nil || g != (Group{Name: "ada.lovelace", GID: 20001}) {
		t.Fatalf("LookupGID = %+v, %v", g, err)
	}
	if _, err := r.LookupGID(ctx, 4242); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing gid: %v", err)
	}
	if in, err := r.InGroup(ctx, u, "analysts"); err != nil || !in {
		t.Fatalf("InGroup(analysts) = %v, %v", in, err)
	}
	if _, err := r.LookupName(ctx, "nobody-here"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing user: %v", err)
	}
	if _, err := r.LookupName(ctx, "broken"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("incomplete record: %v", err)
	}
	if _, err := New(Userdb{Socket: sock + ".none"}).LookupName(ctx, "ada.lovelace"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no socket: %v", err)
	}
}

func FuzzReadReplies(f *testing.F) {
	f.Add([]byte(`{"parameters":{"record":{"userName":"a","uid":1}}}` + "\x00"))
	f.Add([]byte(`{"continues":true,"parameters":{}}` + "\x00" + `{"error":"x"}` + "\x00"))
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		err := readReplies(bufio.NewReader(strings.NewReader(string(data))), "m", func(json.RawMessage) error { n++; return nil })
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("error %v is neither not-found nor unavailable", err)
		}
	})
}
