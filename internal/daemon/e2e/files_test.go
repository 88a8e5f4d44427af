package e2e

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
)

// TestFilesAPI: list, read, write (one file streamed, several at once) in
// a user's executor through the API; a path outside the root refused with
// the executor's own error; every write in the audit trail.
func TestFilesAPI(t *testing.T) {
	h := start(t)
	name, _ := target(t)
	base := "/v1/executors/" + name + "/files"
	// write_file makes no directories; the executor may run as another account.
	if err := os.Mkdir(filepath.Join(h.work, "notes"), 0o777); err != nil || os.Chmod(filepath.Join(h.work, "notes"), 0o777) != nil {
		t.Fatal(err)
	}
	resp := h.raw(t, "PUT", base+"/content?path=notes/a.txt&mode=0640", strings.NewReader("hello\n"), nil)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), `"size":6`) {
		t.Fatalf("write: %d %s", resp.StatusCode, b)
	}
	resp.Body.Close()
	fi, err := os.Stat(filepath.Join(h.work, "notes/a.txt"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("on disk: %v %v", fi, err)
	}
	code, out := h.do(t, "POST", base, map[string]any{"files": []map[string]any{
		{"path": "notes/b.txt", "content": b64("bee")}, {"path": "notes/c.txt", "content": b64("sea")}}})
	if code != 200 || out["written"] != float64(2) {
		t.Fatalf("write several: %d %v", code, out)
	}
	code, out = h.do(t, "GET", base+"?path=notes", nil)
	if code != 200 || !strings.Contains(fmt.Sprint(out["entries"]), "notes/c.txt") {
		t.Fatalf("list: %d %v", code, out)
	}
	resp = h.raw(t, "GET", base+"/content?path=notes/a.txt", nil, map[string]string{"Range": "bytes=1-3"})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || string(b) != "ell" || resp.Header.Get("Content-Range") != "bytes 1-3/6" {
		t.Fatalf("ranged read: %d %q %v", resp.StatusCode, b, resp.Header)
	}
	code, out = h.do(t, "GET", base+"/content?path=../../etc/passwd", nil)
	if code != 403 || !strings.Contains(fmt.Sprint(out), "path_escape") {
		t.Fatalf("a path outside the root: %d %v", code, out)
	}
	code, out = h.do(t, "GET", base+"/content?path=notes/none.txt", nil)
	if code != 404 || !strings.Contains(fmt.Sprint(out), "not_found") {
		t.Fatalf("a missing file: %d %v", code, out)
	}
	if os.Geteuid() == 0 { // another account (daemon, uid 1) asking for the target's files
		routes := []string{"GET " + base + "?path=notes", "GET " + base + "/content?path=notes/a.txt", "PUT " + base + "/content?path=notes/z.txt"}
		answers := h.requestsAs(t, 1, routes)
		for i, route := range routes {
			got := answers[i]
			if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "not_yourself") {
				t.Errorf("%s as another user: %s", route, got)
			}
		}
	}
	_, out = h.do(t, "GET", "/v1/audit?action=file_written", nil)
	for _, p := range []string{"notes/a.txt", "notes/b.txt", "notes/c.txt"} {
		if !strings.Contains(fmt.Sprint(out["records"]), p) {
			t.Errorf("no file_written record for %s: %v", p, out["records"])
		}
	}
}

// TestFilesLarge: a 64 MiB file written and read back through the API,
// checksums equal; a write over max_file_bytes is refused (413).
func TestFilesLarge(t *testing.T) {
	h := startWith(t, nil, func(c *config.Config) { c.API.MaxFileBytes = 80 << 20 })
	name, _ := target(t)
	data := make([]byte, 64<<20)
	_, _ = rand.Read(data)
	want := sha256.Sum256(data)
	base := "/v1/executors/" + name + "/files/content?path=big.bin"
	resp := h.raw(t, "PUT", base, bytes.NewReader(data), nil)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("write 64 MiB: %d", resp.StatusCode)
	}
	resp = h.raw(t, "GET", base, nil, nil)
	sum := sha256.New()
	n, err := io.Copy(sum, resp.Body)
	resp.Body.Close()
	if err != nil || n != int64(len(data)) || !bytes.Equal(sum.Sum(nil), want[:]) {
		t.Fatalf("read back: %d bytes, %v, checksum equal: %v", n, err, bytes.Equal(sum.Sum(nil), want[:]))
	}
	resp = h.raw(t, "PUT", "/v1/executors/"+name+"/files/content?path=huge.bin", io.LimitReader(zeros{}, 81<<20), nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 && resp.StatusCode != 429 || !strings.Contains(string(b), "file_too_large") {
		t.Fatalf("over the limit: %d %s", resp.StatusCode, b)
	}
	if _, err := os.Stat(filepath.Join(h.work, "huge.bin")); err == nil {
		t.Fatal("the refused file is there")
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// sseEvent is one Server-Sent Event.
type sseEvent struct{ id, name, data string }

func readEvents(t *testing.T, rd *bufio.Reader, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	var ev sseEvent
	for len(out) < n {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.name != "" {
				out = append(out, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
	return out
}

// TestFilesWatch: a watch stream sees create, modify and delete in order;
// a client that reconnects with Last-Event-ID gets "resync" (the executor
// cannot replay what it missed), then the changes that follow.
func TestFilesWatch(t *testing.T) {
	h := start(t)
	name, _ := target(t)
	dir := filepath.Join(h.work, "w")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	url := "/v1/executors/" + name + "/files/watch?path=w"
	resp := h.raw(t, "GET", url, nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	rd := bufio.NewReader(resp.Body)
	time.Sleep(200 * time.Millisecond)
	f := filepath.Join(dir, "x.txt")
	_ = os.WriteFile(f, []byte("1"), 0o666)
	time.Sleep(300 * time.Millisecond) // past the executor's coalescing
	_ = os.WriteFile(f, []byte("22"), 0o666)
	time.Sleep(300 * time.Millisecond)
	_ = os.Remove(f)
	// In order: create, one or more modify (a write may be two), delete.
	var ops []string
	var evs []sseEvent
	for len(ops) == 0 || !strings.HasPrefix(ops[len(ops)-1], "file:delete") {
		e := readEvents(t, rd, 1)[0]
		var fe struct{ Path, Op string }
		_ = json.Unmarshal([]byte(e.data), &fe)
		ops, evs = append(ops, e.name+":"+fe.Op+":"+fe.Path), append(evs, e)
		if len(ops) > 6 {
			break
		}
	}
	got := strings.Join(ops, " ")
	if !strings.HasPrefix(got, "file:create:w/x.txt file:modify:w/x.txt") || !strings.HasSuffix(got, "file:delete:w/x.txt") ||
		strings.Count(got, "create") != 1 {
		t.Fatalf("events: %v", ops)
	}
	last := evs[len(evs)-1].id
	resp.Body.Close()
	resp = h.raw(t, "GET", url, nil, map[string]string{"Last-Event-ID": last})
	defer resp.Body.Close()
	rd = bufio.NewReader(resp.Body)
	time.Sleep(200 * time.Millisecond)
	_ = os.WriteFile(filepath.Join(dir, "y.txt"), []byte("y"), 0o666)
	evs = readEvents(t, rd, 2)
	if evs[0].name != "resync" || evs[1].name != "file" || !strings.Contains(evs[1].data, "w/y.txt") || evs[0].id <= last {
		t.Fatalf("after reconnecting from %s: %+v", last, evs)
	}
}
