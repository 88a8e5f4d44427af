package doctor

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/dialback/dialbacktest"
)

// The slurm checks with the backend configured: the commands (answered by
// the test, as Slurm's would be), the certificate against the CA with a
// real TLS listener on loopback, and the test job.
func TestDoctorSlurm(t *testing.T) {
	d, ran := fixture(t)
	p := dialbacktest.New(t)
	write(t, filepath.Join(d.root, "/etc/agor/dialback.pem"), 0o644, string(p.CertPEM))
	write(t, filepath.Join(d.root, "/etc/agor/dialback.key"), 0o600, string(p.KeyPEM))
	write(t, filepath.Join(d.root, "/etc/agor/dialback-ca.pem"), 0o644, string(p.CAPEM))
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{p.Cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	write(t, d.configPath, 0o644, fmt.Sprintf(`execution: {backend: slurm, allowed_users: [ada.lovelace]}
slurm: {listen: "%s", tls_cert: /etc/agor/dialback.pem, tls_key: /etc/agor/dialback.key}
`, ln.Addr()))
	queueFails := false
	base := d.run
	d.run = func(ctx context.Context, name string, args ...string) (string, error) {
		*ran = append(*ran, name+" "+strings.Join(args, " "))
		switch {
		case args[0] == "--version":
			return "slurm 22.05.8\n", nil
		case name == "squeue" && queueFails:
			return "slurm_load_jobs error: Unable to contact slurm controller", fmt.Errorf("exit status 1")
		case name == "squeue":
			return "12|ada.lovelace|RUNNING|node1|None\n", nil
		case name == "setpriv":
			return "agor-executor 0.1.0\n", nil
		}
		return base(ctx, name, args...)
	}
	// Inside the fixture's root the paths resolve: slurm.* paths are read
	// beneath it, as the doctor reads every fixed path.
	if st, detail := line(t, d, "slurm-commands"); st != "ok" || !strings.Contains(detail, "1 agor-executor job(s)") {
		t.Errorf("commands: %s %s", st, detail)
	}
	if st, detail := line(t, d, "slurm-tls"); st != "ok" || !strings.Contains(detail, "answers TLS 1.3") {
		t.Errorf("tls: %s %s", st, detail)
	}
	if st, detail := line(t, d, "slurm-test-job"); st != "ok" || !strings.Contains(detail, "ada.lovelace") {
		t.Errorf("test job: %s %s", st, detail)
	}
	queueFails = true
	if st, detail := line(t, d, "slurm-commands"); st != "FAIL" || !strings.Contains(detail, "Unable to contact") {
		t.Errorf("controller down: %s %s", st, detail)
	}
	// A CA that did not sign the certificate: the nodes would refuse it.
	write(t, filepath.Join(d.root, "/etc/agor/dialback-ca.pem"), 0o644, string(dialbacktest.New(t).CAPEM))
	if st, detail := line(t, d, "slurm-tls"); st != "FAIL" || !strings.Contains(detail, "unknown authority") {
		t.Errorf("other CA: %s %s", st, detail)
	}
}
