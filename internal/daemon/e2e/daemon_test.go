package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon"
	"github.com/agor-sh/agor/internal/dialback/dialbacktest"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// The whole daemon path: first use starts the executor as the user, exec
// runs there and its output comes back, a key is stored sealed, and the
// audit trail records it all without the key's value.
func TestDaemonEndToEnd(t *testing.T) {
	h := start(t)
	name, uid := target(t)
	code, out := h.do(t, "PUT", "/v1/executors/"+name, nil)
	ping, _ := out["ping"].(map[string]any)
	if code != 200 || ping["uid"] != float64(uid) || ping["user"] != name {
		t.Fatalf("PUT executor: %d %v", code, out)
	}
	code, out = h.do(t, "POST", "/v1/executors/"+name+"/exec", map[string]any{"argv": []string{"sh", "-c", "id -un; echo oops >&2; exit 3"}, "cwd": "."})
	if code != 200 || out["stdout"] != name+"\n" || out["stderr"] != "oops\n" || out["exit_code"] != float64(3) {
		t.Fatalf("exec: %d %v", code, out)
	}
	const secret = "sk-test-0123456789abcdef"
	if code, out = h.do(t, "PUT", "/v1/credentials/ANTHROPIC_API_KEY", map[string]any{"value": secret}); code != 200 {
		t.Fatalf("set credential: %d %v", code, out)
	}
	if code, out = h.do(t, "PUT", "/v1/credentials/bad-name", map[string]any{"value": "x"}); code != 400 {
		t.Fatalf("bad credential name: %d %v", code, out)
	}
	if code, out = h.do(t, "PUT", "/v1/credentials/OTHER_KEY", map[string]any{"value": "v-123456"}); code != 200 {
		t.Fatalf("set another credential: %d %v", code, out)
	}
	if code, out = h.do(t, "DELETE", "/v1/credentials/OTHER_KEY", nil); code != 200 || out["deleted"] != true {
		t.Fatalf("delete credential: %d %v", code, out)
	}
	if code, out = h.do(t, "DELETE", "/v1/credentials/OTHER_KEY", nil); code != 404 {
		t.Fatalf("delete it again: %d %v", code, out)
	}
	if code, out = h.do(t, "GET", "/v1/executors/"+name+"/terminals", nil); code != 200 || out["terminals"] == nil {
		t.Fatalf("list terminals: %d %v", code, out)
	}
	if code, out = h.do(t, "GET", "/v1/executors", nil); code != 200 || !strings.Contains(fmt.Sprint(out["executors"]), name) {
		t.Fatalf("list executors: %d %v", code, out)
	}
	execs, _ := out["executors"].([]any)
	first, _ := execs[0].(map[string]any)
	usage, _ := first["usage"].(map[string]any)
	if usage["source"] != "proc" || usage["cpu_usage_nsec"] == nil || usage["memory_bytes"].(float64) <= 0 || usage["io_read_bytes"] != nil {
		t.Errorf("the direct backend's usage of a running executor: %v", first)
	}
	resp, err := h.client.Get("http://agor/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`agor_api_requests_total{route="PUT /v1/executors/{user}",code="200"} 1`, "agor_executors_connected 1", `agor_executor_memory_bytes{user="` + name + `"} `, `agor_executor_cpu_seconds_total{user="` + name + `"} `} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}
	if code, out = h.do(t, "DELETE", "/v1/executors/"+name, nil); code != 200 || out["stopped"] != true {
		t.Fatalf("stop executor: %d %v", code, out)
	}
	_, out = h.do(t, "GET", "/v1/audit", nil)
	got := fmt.Sprint(out["records"])
	for _, want := range []string{"executor_started", "credential_set", "credential_deleted", "ANTHROPIC_API_KEY"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit trail lacks %s: %s", want, got)
		}
	}
	h.stop()
	keys, _ := filepath.Glob(filepath.Join(h.state, "credentials", "*.json"))
	if len(keys) == 0 {
		t.Error("no credential file stored")
	}
	for _, f := range append([]string{filepath.Join(h.state, "audit.jsonl")}, keys...) {
		b, err := os.ReadFile(f)
		if err != nil || bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s: err %v, or it holds the key in clear", f, err)
		}
	}
}

// An executor killed under a running request fails the request as
// "executor crashed" promptly, and the next request starts a new one.
func TestDaemonExecutorCrash(t *testing.T) {
	h := start(t)
	name, _ := target(t)
	_, out := h.do(t, "PUT", "/v1/executors/"+name, nil)
	pid := int(out["ping"].(map[string]any)["pid"].(float64))
	type result struct {
		code int
		out  map[string]any
	}
	res := make(chan result, 1)
	go func() {
		code, out := h.do(t, "POST", "/v1/executors/"+name+"/exec", map[string]any{"argv": []string{"sleep", "30"}, "cwd": "."})
		res <- result{code, out}
	}()
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
	select {
	case r := <-res:
		e, _ := r.out["error"].(map[string]any)
		if r.code != 503 || e["reason"] != "executor_crashed" {
			t.Fatalf("after kill -9: %d %v", r.code, r.out)
		}
		t.Logf("in-flight request failed %s after kill -9", time.Since(killed).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight request did not fail after kill -9")
	}
	_, out = h.do(t, "PUT", "/v1/executors/"+name, nil)
	if p, _ := out["ping"].(map[string]any); p == nil || int(p["pid"].(float64)) == pid {
		t.Fatalf("no new executor after the crash: %v", out)
	}
}

// A terminal through the daemon: spawned as the user, attached over the
// upgraded stream, input reaches the shell, output and the exit status
// come back; a second attach after a detach replays recent output.
func TestDaemonTerminal(t *testing.T) {
	h := start(t)
	name, _ := target(t)
	code, out := h.do(t, "POST", "/v1/executors/"+name+"/terminals", map[string]any{"cwd": ".", "shell": "/bin/sh", "cols": 80, "rows": 24})
	id, _ := out["terminal_id"].(string)
	if code != 200 || id == "" {
		t.Fatalf("spawn: %d %v", code, out)
	}
	s := h.attach(t, name, id)
	s.send(t, `{"input":"`+b64("echo first-$((40+2)); id -un\n")+`"}`)
	s.waitFor(t, "first-42")
	s.send(t, `{"detach":true}`)
	s.close()

	s = h.attach(t, name, id)
	s.waitFor(t, "first-42") // replayed from the scrollback
	s.send(t, `{"resize":[100,30]}`)
	s.send(t, `{"input":"`+b64("stty size; exit 3\n")+`"}`)
	s.waitFor(t, "30 100")
	if got := s.exitCode(t); got != 3 {
		t.Fatalf("exit status %d, want 3", got)
	}
}

// With api.tcp_address set, the API also answers on TCP, to bearer
// tokens only: a token acts as its user, with that user's rights.
func TestDaemonTCPBearer(t *testing.T) {
	name, _ := target(t)
	tokens := filepath.Join(t.TempDir(), "api-tokens")
	const tok = "tok-0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(tokens, []byte("# user sha256\n"+name+" "+apiwire.HashToken(tok)+"\nroot nothex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startWith(t, nil, func(c *config.Config) { c.API.TCPAddress = "127.0.0.1:0"; c.API.TokensFile = tokens })
	url := "http://" + h.d.TCPAddr().String()
	get := func(path, bearer string) int {
		req, _ := http.NewRequest("GET", url+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, bearer string
		want         int
	}{
		{"/v1/health", "", 401},
		{"/v1/health", "wrong", 401},
		{"/v1/health", tok, 200},
		{"/v1/sessions", tok, 200},
		{"/v1/executors", tok, 200}, // not an admin: her own executor only (TestOwnExecutor)
	} {
		if got := get(tc.path, tc.bearer); got != tc.want {
			t.Errorf("GET %s with %q: %d, want %d", tc.path, tc.bearer, got, tc.want)
		}
	}
}

// TestDaemonTCPNeedsTLS: a non-loopback api.tcp_address without a
// certificate is refused at start, naming the fix; with one, the API
// answers over HTTPS only.
func TestDaemonTCPNeedsTLS(t *testing.T) {
	c := config.Default()
	c.API.TCPAddress = "0.0.0.0:0"
	if _, err := daemon.New(daemon.Options{Config: c}); err == nil || !strings.Contains(err.Error(), "api.tls_cert") {
		t.Fatalf("non-loopback without TLS: %v", err)
	}
	name, _ := target(t)
	dir := t.TempDir()
	p := dialbacktest.New(t)
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if os.WriteFile(cert, p.CertPEM, 0o644) != nil || os.WriteFile(key, p.KeyPEM, 0o600) != nil {
		t.Fatal("write the certificate")
	}
	tokens := filepath.Join(dir, "api-tokens")
	const tok = "tok-tls-0123456789abcdef0123456789ab"
	if err := os.WriteFile(tokens, []byte(name+" "+apiwire.HashToken(tok)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startWith(t, nil, func(c *config.Config) {
		// TLS on loopback: the tests listen on no other address.
		c.API.TCPAddress, c.API.TokensFile, c.API.TLSCert, c.API.TLSKey = "127.0.0.1:0", tokens, cert, key
	})
	_, port, _ := net.SplitHostPort(h.d.TCPAddr().String())
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CAPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", "https://127.0.0.1:"+port+"/v1/health", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTPS with the token: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := http.Get("http://127.0.0.1:" + port + "/v1/health"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP answered on the TLS port")
	}
}
