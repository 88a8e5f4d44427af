package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// The gateway's door, with a real daemon and executor: whatever a running
// task's agent holds (its key variable and relay address, which a
// confined prompt can print) is no use to anyone else. A stand-in Claude
// Code (doorAgent) writes its environment and makes its model requests
// with curl, waiting between them for the test.
//
//   - bob (another uid) sending her agent's key to her relay: refused;
//     bob's 300 idle connections to it: each closed at once, while her
//     agent's next request is served (its time printed);
//   - bob sending it straight to the gateway's socket: refused;
//   - her own exec (no task's process) sending it to her relay, during
//     that task and during the session's next task: refused;
//   - her other session's agent sending it: served as that session's
//     own task, never as the task it was read from;
//   - the session's warm agent, its next turn: served as the next task;
//   - each refusal audited (gateway_refused).
//
// Before the door each of these but bob's straight one was served, as
// the task it was read from, and bob's connections took the relay's 256
// places: her request waited until curl gave up.
func TestGatewayDoor(t *testing.T) {
	name, _ := target(t)
	model := modeltest.NewAnthropic(t)
	h := startWith(t, doorAgent, gatewayOn(model.URL))
	h.setKey(t, "sk-ant-real-door")
	a := h.doorPrompt(t, name, "a", "")
	envA := a.env(t)
	key, base := envA["ANTHROPIC_API_KEY"], envA["ANTHROPIC_BASE_URL"]
	if got := a.file(t, "first"); got != "200" {
		t.Fatalf("her agent's own request: %s", got)
	}
	relay := strings.TrimPrefix(base, "http://")
	if got := h.doorAs(t, 65534, "post", base, key); got == "200" {
		t.Errorf("bob, with her agent's key, at her relay: %s, want refused", got)
	}
	if got := h.doorAs(t, 65534, "post", "unix:"+h.opts.Config.Gateway.SocketPath, key); got == "200" {
		t.Errorf("bob, with her agent's key, at the gateway's socket: %s, want refused", got)
	}
	if got := h.curlAsHer(t, name, base, key); got == "200" {
		t.Errorf("her exec (no task's process) with her agent's key, while its task runs: %s, want refused", got)
	}
	b := h.doorPrompt(t, name, "b", key) // her other session's agent, with a's key
	b.wait(t)
	if got := b.file(t, "first"); got != "200" {
		t.Fatalf("her other session's agent: %s", got)
	}
	h.checkSpend(t, b.task, 2, "her other session's requests")
	h.checkSpend(t, a.task, 1, "the task its key was read from")
	bob := h.holdAs(t, 65534, relay, 300)
	a.release(t)
	a.wait(t)
	bob.done(t)
	if got := a.file(t, "second"); got != "200" {
		t.Fatalf("her agent's request beside bob's 300 connections: %s", got)
	}
	c := h.doorPrompt(t, name, "c", "", "session_id", a.session) // the session's next task
	if got := h.curlAsHer(t, name, base, key); got == "200" {
		t.Errorf("her exec with the key read during the session's last task, during its next: %s, want refused", got)
	}
	c.release(t)
	if res := c.wait(t); !strings.Contains(res, `"warm":true`) {
		t.Errorf("the session's next task did not run on its warm agent: %s", res)
	}
	h.checkSpend(t, c.task, 2, "the warm agent's next turn (its own task's credential)")
	h.checkSpend(t, a.task, 2, "the task its key was read from, after it ended")
	t.Logf("her agent's request beside bob's %d held connections (%s of them closed by the relay as they came): %s ms", 300, bob.closed, a.file(t, "second-ms"))
	h.checkRefusalsAudited(t, name)
}

// A confined agent's requests (its processes in the sandbox's own user,
// mount and PID namespaces) are its task's: the door, outside, finds them
// in its tree, and the gateway serves them as that task's.
func TestGatewayDoorConfined(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	name, _ := target(t)
	model := modeltest.NewAnthropic(t)
	h := startWith(t, doorAgent, gatewayOn(model.URL))
	h.setKey(t, "sk-ant-real-door")
	proj := filepath.Join(h.work, "proj") // a workspace is a project, not the executor's root
	if err := os.Mkdir(proj, 0o777); err != nil || os.Chmod(proj, 0o777) != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(proj, "go-d"), "", 0o644) // no wait
	d := h.doorPrompt(t, name, "d", "", "cwd", "proj", "sandbox", "workspace")
	res := d.wait(t)
	if !strings.Contains(res, `"level":"workspace"`) || d.file(t, "first") != "200" || d.file(t, "second") != "200" {
		t.Fatalf("the confined agent's requests: %s, %s; result %s", d.file(t, "first"), d.file(t, "second"), res)
	}
	h.checkSpend(t, d.task, 2, "the confined agent's requests")
}

// doorAgent is agents.yaml for the stand-in Claude Code: for each turn
// whose prompt says door-TAG it writes, in its cwd, its environment to env-TAG, makes
// one request (key-TAG's key if that exists, else its own) to its
// ANTHROPIC_BASE_URL, status in first-TAG, says ready-TAG, waits for
// go-TAG, makes another (second-TAG, its time in second-ms-TAG) and ends
// the turn.
func doorAgent(work string) string {
	bin := filepath.Join(work, "door-claude")
	script := `#!/bin/sh
W=$PWD
ask() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 20 -H "x-api-key: $1" -H 'anthropic-version: 2023-06-01' \
		-H 'content-type: application/json' -d '{"model":"stand-in","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}' \
		"$ANTHROPIC_BASE_URL/v1/messages"
}
read -r init
while read -r line; do
	case "$line" in *'"type":"user"'*) ;; *) continue ;; esac
	tag=$(printf '%s' "$line" | sed -n 's/.*door-\([a-z]*\).*/\1/p')
	env >"$W/env-$tag"
	echo '{"type":"system","subtype":"init","session_id":"door-'"$tag"'"}'
	key=$ANTHROPIC_API_KEY
	[ -e "$W/key-$tag" ] && key=$(cat "$W/key-$tag")
	ask "$key" >"$W/first-$tag.tmp"; mv "$W/first-$tag.tmp" "$W/first-$tag"
	touch "$W/ready-$tag"
	while [ ! -e "$W/go-$tag" ]; do sleep 0.05; done
	t0=$(date +%s%N)
	ask "$key" >"$W/second-$tag.tmp"
	echo $((($(date +%s%N) - t0) / 1000000)) >"$W/second-ms-$tag"
	mv "$W/second-$tag.tmp" "$W/second-$tag"
	echo '{"type":"result","subtype":"success","session_id":"door-'"$tag"'","usage":{"input_tokens":1,"output_tokens":1}}'
done
`
	home := filepath.Join(work, "home") // a confined agent keeps its state there
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil || os.Mkdir(home, 0o777) != nil || os.Chmod(home, 0o777) != nil {
		panic(fmt.Sprint("the stand-in agent: ", err)) // the harness's agents func has no t
	}
	return "claude-code:\n  binary: " + bin + "\n  env:\n    HOME: " + home + "\n"
}

// doorRun is one prompt of doorAgent's, running until released.
type doorRun struct {
	h             *harness
	dir, tag      string // dir: the agent's cwd, where its files are
	task, session string
	done          chan error
	result        string // once done
}

// doorPrompt starts a prompt for tag (with key for its key when not ""),
// with over's fields, and waits until its agent has made its first
// request.
func (h *harness) doorPrompt(t *testing.T, user, tag, key string, over ...string) *doorRun {
	t.Helper()
	body := map[string]any{"agentic_tool": "claude-code", "prompt": "door-" + tag, "cwd": ".", "timeout_ms": 120000, "model": "stand-in"}
	for i := 0; i+1 < len(over); i += 2 {
		body[over[i]] = over[i+1]
	}
	dir := filepath.Join(h.work, body["cwd"].(string))
	if key != "" {
		write(t, filepath.Join(dir, "key-"+tag), key, 0o644)
		write(t, filepath.Join(dir, "go-"+tag), "", 0o644) // no wait
	}
	b, _ := json.Marshal(body)
	resp, err := h.client.Post("http://agor/v1/executors/"+user+"/prompt", "application/json", bytes.NewReader(b))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("prompt %s: %v %v", tag, resp, err)
	}
	r := &doorRun{h: h, dir: dir, tag: tag, done: make(chan error, 1)}
	ids := make(chan [2]string, 1)
	go func() { r.done <- readPrompt(resp.Body, ids, &r.result) }()
	select {
	case id := <-ids:
		r.task, r.session = id[0], id[1]
	case err := <-r.done:
		t.Fatalf("prompt %s ended before its task: %v", tag, err)
	}
	for end := time.Now().Add(30 * time.Second); !r.exists("first"); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-r.done:
			t.Fatalf("prompt %s ended before its agent's first request: %v", tag, err)
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("the agent of %s never made its first request", tag)
		}
	}
	return r
}

// readPrompt reads a prompt's NDJSON: its task and session ids, once,
// then its result, whose status must be completed.
func readPrompt(body io.ReadCloser, ids chan<- [2]string, result *string) error {
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sent := false; sc.Scan(); {
		var l apiwire.PromptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return err
		}
		if !sent && l.TaskID != "" && l.SessionID != "" {
			ids <- [2]string{l.TaskID, l.SessionID}
			sent = true
		}
		if l.Result != nil {
			*result = string(l.Result)
			if !strings.Contains(string(l.Result), `"status":"completed"`) {
				return fmt.Errorf("result %s", l.Result)
			}
			return nil
		}
		if l.Error != nil {
			return fmt.Errorf("error %s", sc.Text())
		}
	}
	return fmt.Errorf("no result: %v", sc.Err())
}

func (r *doorRun) exists(what string) bool {
	_, err := os.Stat(filepath.Join(r.dir, what+"-"+r.tag))
	return err == nil
}

func (r *doorRun) file(t *testing.T, what string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, what+"-"+r.tag))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// env is the agent's environment as it wrote it.
func (r *doorRun) env(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, kv := range strings.Split(r.file(t, "env"), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// release lets the agent make its second request and end its turn.
func (r *doorRun) release(t *testing.T) {
	write(t, filepath.Join(r.dir, "go-"+r.tag), "", 0o644)
}

// wait waits for the prompt's end and returns its result.
func (r *doorRun) wait(t *testing.T) string {
	t.Helper()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("prompt %s: %v", r.tag, err)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("prompt %s did not end", r.tag)
	}
	return r.result
}

// checkSpend wants n ledger rows for task.
func (h *harness) checkSpend(t *testing.T, task string, n int, what string) {
	t.Helper()
	rows, err := h.d.Store().TaskSpend(task)
	if err != nil || len(rows) != n {
		t.Errorf("%s: %d ledger rows for task %s (%v), want %d", what, len(rows), task, err, n)
	}
}

// curlAsHer has her executor run curl (an exec: her account, no task's
// process) with key at base; the status it got ("000": none).
func (h *harness) curlAsHer(t *testing.T, user, base, key string) string {
	t.Helper()
	code, out := h.do(t, "POST", "/v1/executors/"+user+"/exec", map[string]any{"cwd": ".", "argv": []string{"curl", "-s", "-o", "/dev/null",
		"-w", "%{http_code}", "--max-time", "10", "-H", "x-api-key: " + key, "-H", "content-type: application/json",
		"-d", `{"model":"stand-in","max_tokens":8,"messages":[]}`, base + "/v1/messages"}})
	if code != 200 {
		t.Fatalf("exec: %d %v", code, out)
	}
	s, _ := out["stdout"].(string)
	return s
}

// checkRefusalsAudited wants the audit trail to name each refusal.
func (h *harness) checkRefusalsAudited(t *testing.T, user string) {
	t.Helper()
	want := []string{"another_account (from uid 65534)", "not_a_task", "no credential"}
	var reasons []string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		_, out := h.do(t, "GET", "/v1/audit?action=gateway_refused", nil)
		reasons = reasons[:0]
		recs, _ := out["records"].([]any)
		for _, r := range recs {
			m, _ := r.(map[string]any)
			reasons = append(reasons, fmt.Sprintf("%v: %v x%v", m["user"], m["reason"], m["count"]))
		}
		if all(reasons, want) {
			t.Logf("audited: %q", reasons)
			return
		}
	}
	t.Errorf("gateway_refused records %q, want each of %q", reasons, want)
}

func all(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || strings.Contains(h, w)
		}
		if !found {
			return false
		}
	}
	return true
}

// doorAs runs the test binary as uid (doorChild): "post URL KEY" sends one
// Messages request with KEY to URL ("unix:PATH" for a socket) and says its
// status ("000" when refused without one, or the connection went).
func (h *harness) doorAs(t *testing.T, uid uint32, args ...string) string {
	t.Helper()
	cmd := h.childAs(t, uid, args...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v as uid %d: %v", args, uid, err)
	}
	return strings.TrimSpace(string(out))
}

func (h *harness) childAs(t *testing.T, uid uint32, args ...string) *exec.Cmd {
	bin := filepath.Join(filepath.Dir(h.sock), "client")
	if _, err := os.Stat(bin); err != nil { // a copy other uids may run
		self, err := os.ReadFile(os.Args[0])
		if err != nil || os.WriteFile(bin, self, 0o755) != nil {
			t.Fatalf("a client for uid %d: %v", uid, err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGOR_TEST_DOOR_AS="+strings.Join(args, "\x1f"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	cmd.Stderr = os.Stderr
	return cmd
}

// held is another uid's connections to a relay, held open.
type held struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	closed string // how many the relay closed within 2 s
}

// holdAs opens n connections to addr as uid and holds them until done.
func (h *harness) holdAs(t *testing.T, uid uint32, addr string, n int) *held {
	t.Helper()
	cmd := h.childAs(t, uid, "hold", addr, strconv.Itoa(n))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	x := &held{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	if !x.out.Scan() || x.out.Text() != "ready" {
		t.Fatalf("uid %d's %d connections to %s: %s", uid, n, addr, x.out.Text())
	}
	return x
}

func (x *held) done(t *testing.T) {
	t.Helper()
	x.in.Close()
	if x.out.Scan() {
		x.closed = x.out.Text()
	}
	_ = x.cmd.Wait()
}

// doorChild is the test binary run as another uid (TestMain).
func doorChild(spec string) int {
	args := strings.Split(spec, "\x1f")
	switch args[0] {
	case "post":
		fmt.Println(doorPost(args[1], args[2]))
	case "hold":
		n, _ := strconv.Atoi(args[2])
		return doorHold(args[1], n)
	}
	return 0
}

func doorPost(target, key string) string {
	tr := &http.Transport{}
	base := target
	if sock, ok := strings.CutPrefix(target, "unix:"); ok {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}
		base = "http://gateway"
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(`{"model":"stand-in","max_tokens":8,"messages":[]}`))
	req.Header.Set("x-api-key", key)
	req.Header.Set("content-type", "application/json")
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "000"
	}
	defer resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

// doorHold opens n idle connections to addr, says ready, and when stdin
// ends says how many the other end had closed meanwhile.
func doorHold(addr string, n int) int {
	if u, err := url.Parse("http://" + addr); err == nil {
		addr = u.Host
	}
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Println("dial:", err)
			return 1
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	closed := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := io.ReadAll(c); err == nil || !os.IsTimeout(err) {
			closed++
		}
	}
	fmt.Println(closed)
	return 0
}
