package config

import (
	"strings"
	"testing"
)

func TestSlurmSection(t *testing.T) {
	base := "execution:\n  backend: slurm\nslurm:\n  listen: 10.0.0.1:7443\n  tls_cert: /etc/agor/dialback.pem\n  tls_key: /etc/agor/dialback.key\n"
	c, err := Parse(strings.NewReader(base + "  job: {partition: main, cpus: 2}\n  groups:\n    - {group: gpu, partition: gpu, memory: 8G}\n  users:\n    alice: {time_limit: \"2:00:00\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s := c.Slurm
	if s.AdvertiseAddr() != "10.0.0.1:7443" || s.JobName != "agor-executor" || s.CAFile != "/etc/agor/dialback-ca.pem" {
		t.Errorf("defaults: %+v", s)
	}
	got := s.Job.Over(s.Groups[0].JobSettings).Over(s.Users["alice"])
	if got != (JobSettings{Partition: "gpu", Memory: "8G", CPUs: 2, TimeLimit: "2:00:00"}) {
		t.Errorf("resolved %+v", got)
	}
	for bad, key := range map[string]string{
		"execution:\n  backend: slurm\n":                        "slurm.listen",
		base + "  job: {partition: \"main --uid=0\"}\n":         "slurm.job.partition",
		base + "  users:\n    alice: {memory: \"1G'\"}\n":       "slurm.users.alice.memory",
		base + "  executor_path: bin/agor-executor\n":           "slurm.executor_path",
		base + "  groups:\n    - {group: \"\", partition: x}\n": "slurm.groups[0].group",
		strings.Replace(base, "10.0.0.1:7443", "nowhere", 1):    "slurm.listen",
	} {
		c, err := Parse(strings.NewReader(bad))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", bad, err, key)
		}
	}
}
