package envunit

import (
	"os"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/envdef"
)

func shipped(t *testing.T) (string, string) {
	t.Helper()
	svc, err := os.ReadFile("../../../systemd/agor-executor@.service")
	if err != nil {
		t.Fatal(err)
	}
	sock, err := os.ReadFile("../../../systemd/agor-executor@.socket")
	if err != nil {
		t.Fatal(err)
	}
	return string(svc), string(sock)
}

// TestRender: the environment's units keep every line of the shipped
// ones (hardening, User=, slice), name each other, listen in the
// environment's directory, and add the root and the binds.
func TestRender(t *testing.T) {
	t.Parallel()
	service, socket := shipped(t)
	d := envdef.Definition{Name: "py", Root: "/srv/py", Agents: envdef.AgentsHost, Users: []string{"alice"}, Bind: []string{"/srv/work"}}
	svc, sock, err := Render(service, socket, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"User=%I\n", "Slice=agor-executors.slice\n", "NoNewPrivileges=yes\n", "RestrictNamespaces=user mnt pid ipc\n",
		"RestartPreventExitStatus=78\n", "Requires=agor-env-py@%i.socket\n", "After=agor-env-py@%i.socket\n",
		"[Service]\n# Environment py", "Environment=AGOR_EXECUTOR_ENVIRONMENT=py\n", "RootDirectory=/srv/py\n",
		"BindReadOnlyPaths=/usr/libexec/agor/agor-executor /etc/agor /etc/passwd /etc/group -/etc/resolv.conf -/etc/hosts /run/agor -/run/systemd/notify -/usr/local -/opt\n",
		"BindPaths=/home /srv/work\n", "Description=agor executor for %I in environment py\n",
	} {
		if !strings.Contains(svc, want) {
			t.Errorf("service lacks %q:\n%s", want, svc)
		}
	}
	if strings.Contains(svc, "agor-executor@%i") {
		t.Errorf("service still names the host's units:\n%s", svc)
	}
	for _, want := range []string{"ListenStream=/run/agor/executors/py/%i.sock\n", "SocketGroup=agor\n", "SocketMode=0660\n"} {
		if !strings.Contains(sock, want) {
			t.Errorf("socket lacks %q:\n%s", want, sock)
		}
	}
	// Every line of the shipped service survives (some extended).
	for _, l := range strings.Split(service, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") && !strings.Contains(svc, strings.ReplaceAll(l, "agor-executor@", "agor-env-py@")) {
			t.Errorf("shipped line %q is gone", l)
		}
	}
}

func TestRenderImage(t *testing.T) {
	t.Parallel()
	service, socket := shipped(t)
	d := envdef.Definition{Name: "img", Image: "/srv/img.raw", Agents: envdef.AgentsImage}
	svc, _, err := Render(service, socket, d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svc, "RootImage=/srv/img.raw\n") || strings.Contains(svc, "RootDirectory=") || strings.Contains(svc, "/usr/local") {
		t.Errorf("image service:\n%s", svc)
	}
}

func TestRenderRefuses(t *testing.T) {
	t.Parallel()
	service, socket := shipped(t)
	bad := envdef.Definition{Name: "py", Root: "/srv/py:x", Agents: envdef.AgentsHost}
	if _, _, err := Render(service, socket, bad); err == nil {
		t.Error("a root with ':' rendered")
	}
	good := envdef.Definition{Name: "py", Root: "/srv/py", Agents: envdef.AgentsHost}
	if _, _, err := Render("[Unit]\n", socket, good); err == nil {
		t.Error("a service without ExecStart= rendered")
	}
}
