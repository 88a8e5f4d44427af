package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/agor-sh/agor/internal/config"
)

// --- slurm ---------------------------------------------------------------------------

// slurmOnly passes a check the backend does not use (nothing to fix).
func slurmOnly(d *Doctor) (config.Slurm, *Finding) {
	switch {
	case d.cfg == nil:
		f := skip("no configuration (see the config check)")
		return config.Slurm{}, &f
	case d.cfg.Execution.Backend != "slurm":
		f := ok("not used: backend is %s", d.cfg.Execution.Backend)
		return config.Slurm{}, &f
	}
	return d.cfg.Slurm, nil
}

// checkSlurmCommands: the commands the backend runs are here and the
// controller answers the daemon's one query.
func checkSlurmCommands(ctx context.Context, d *Doctor) Finding {
	s, skipped := slurmOnly(d)
	if skipped != nil {
		return *skipped
	}
	for _, c := range []string{"sbatch", "scancel", "squeue"} {
		if _, err := d.run(ctx, c, "--version"); err != nil {
			return fail("install Slurm's client commands (Debian: slurm-client) on this login host", "%s: %v", c, err)
		}
	}
	out, err := d.run(ctx, "squeue", "--noheader", "--states=all", "--name="+s.JobName, "--format=%i|%u|%T|%N|%r")
	if err != nil {
		return fail("check slurmctld and munge (scontrol ping; systemctl status munge)", "squeue: %v: %s", err, strings.TrimSpace(out))
	}
	n := 0
	if t := strings.TrimSpace(out); t != "" {
		n = strings.Count(t, "\n") + 1
	}
	return ok("sbatch, scancel and squeue answer; %d %s job(s) known to the controller", n, s.JobName)
}

// checkSlurmTLS: the dial-back certificate loads with its key, is valid
// now, is signed by the CA the nodes pin for the name they check, and the
// daemon's listener speaks it.
func checkSlurmTLS(ctx context.Context, d *Doctor) Finding {
	s, skipped := slurmOnly(d)
	if skipped != nil {
		return *skipped
	}
	cert, err := tls.LoadX509KeyPair(d.path(s.TLSCert), d.path(s.TLSKey))
	if err != nil {
		return fail("slurm.tls_cert and slurm.tls_key: a PEM certificate and its key, the key readable by agor", "%v", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return fail("slurm.tls_cert: a PEM certificate", "%v", err)
	}
	pool, err := caPool(d.path(s.CAFile))
	if err != nil {
		return fail("slurm.ca_file: the CA that signed slurm.tls_cert, at this path on every node", "%v", err)
	}
	name := serverName(s)
	inter := x509.NewCertPool()
	for _, c := range cert.Certificate[1:] {
		if ic, err := x509.ParseCertificate(c); err == nil {
			inter.AddCert(ic)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, Intermediates: inter}); err != nil {
		return fail("issue slurm.tls_cert from slurm.ca_file's CA for "+name+" (subjectAltName), or set slurm.server_name", "%v", err)
	}
	left := time.Until(leaf.NotAfter).Round(time.Hour)
	if err := dialTLS(ctx, s.AdvertiseAddr(), name, pool); err != nil {
		return fail("systemctl status agor-daemon; the listener is slurm.listen, the nodes dial slurm.advertise", "%v", err)
	}
	return ok("certificate for %s signed by %s, valid for %s more; the listener at %s answers TLS 1.3", name, s.CAFile, left, s.AdvertiseAddr())
}

func serverName(s config.Slurm) string {
	if s.ServerName != "" {
		return s.ServerName
	}
	host, _, _ := net.SplitHostPort(s.AdvertiseAddr())
	return host
}

func caPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return p, nil
}

// dialTLS is what a node's executor does first, without a token: the
// handshake only.
func dialTLS(ctx context.Context, addr, name string, pool *x509.CertPool) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	td := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: name, MinVersion: tls.VersionTLS13}}
	c, err := td.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// checkSlurmTestJob: a job of the sample user starts on a node within
// 30 s and finds the executor there.
func checkSlurmTestJob(ctx context.Context, d *Doctor) Finding {
	s, skipped := slurmOnly(d)
	if skipped != nil {
		return *skipped
	}
	if d.euid != 0 {
		return skip("run as root: the test job is submitted as %s", d.sample)
	}
	if d.sample == "" || d.sample == "nobody" {
		return skip("no user to submit a test job as: name one in execution.allowed_users, or run agorctl doctor --user NAME")
	}
	out, err := d.run(ctx, "setpriv", "--reuid="+d.sample, "--regid="+d.sample, "--init-groups",
		"srun", "--immediate=30", "--nodes=1", "--time=1", "--job-name=agor-doctor", s.ExecutorPath, "--version")
	if err != nil {
		return fail("the nodes need "+s.ExecutorPath+" (slurm.executor_path), a free node in the partition, and "+d.sample+" known there (one directory)",
			"test job as %s: %v: %s", d.sample, err, strings.TrimSpace(out))
	}
	return ok("a test job of %s started and found %s", d.sample, strings.TrimSpace(out))
}
