// These tests run the rule's logic under Node.js with a stand-in polkit
// object, against the names the daemon writes (account.Escape).
package polkit_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/account"
)

// harness loads the rule and prints its answer for each request.
const harness = `
const fs = require("fs");
let rule;
const polkit = {Result: {YES: "yes", NOT_HANDLED: "not_handled"}, addRule: f => { rule = f; }};
eval(fs.readFileSync("50-agor.rules", "utf8"));
const out = JSON.parse(fs.readFileSync(0, "utf8")).map(r => rule(
  {id: r.id, lookup: k => ({unit: r.unit, verb: r.verb})[k]}, {user: r.user}));
console.log(JSON.stringify(out));
`

type request struct {
	ID   string `json:"id"`
	Unit string `json:"unit"`
	Verb string `json:"verb"`
	User string `json:"user"`
}

func decide(t *testing.T, reqs []request) []string {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	in, _ := json.Marshal(reqs)
	cmd := exec.Command(node, "-e", harness)
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var res []string
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return res
}

const manage = "org.freedesktop.systemd1.manage-units"

func TestRule(t *testing.T) {
	cases := map[request]string{
		{manage, "agor-executor@alice.socket", "start", "agor"}:                            "yes",
		{manage, "agor-executor@ada.lovelace.service", "stop", "agor"}:                     "yes",
		{manage, `agor-executor@mary\x2djane.socket`, "restart", "agor"}:                   "yes",
		{manage, `agor-executor@jsmith\x40corp.example.socket`, "start", "agor"}:           "yes",
		{manage, `agor-executor@\x2ehidden.socket`, "reset-failed", "agor"}:                "yes",
		{manage, "agor-executor@root.service", "start", "agor"}:                            "not_handled",
		{manage, `agor-executor@r\x6fot.service`, "start", "agor"}:                         "not_handled",
		{manage, `agor-executor@\x72oot.service`, "start", "agor"}:                         "not_handled",
		{manage, "agor-executor@mary-jane.socket", "start", "agor"}:                        "not_handled",
		{manage, "agor-executor@.hidden.socket", "start", "agor"}:                          "not_handled",
		{manage, `agor-executor@a\x2D.socket`, "start", "agor"}:                            "not_handled",
		{manage, `agor-executor@a\x2.socket`, "start", "agor"}:                             "not_handled",
		{manage, "agor-executor@alice.timer", "start", "agor"}:                             "not_handled",
		{manage, "ssh.service", "stop", "agor"}:                                            "not_handled",
		{manage, "agor-executor@alice.socket", "enable", "agor"}:                           "not_handled",
		{manage, "agor-executor@alice.service", "set-property", "agor"}:                    "yes",
		{manage, `agor-executor@mary\x2djane.service`, "set-property", "agor"}:             "yes",
		{manage, "agor-executor@alice.socket", "set-property", "agor"}:                     "not_handled",
		{manage, "agor-executor@root.service", "set-property", "agor"}:                     "not_handled",
		{manage, `agor-executor@r\x6fot.service`, "set-property", "agor"}:                  "not_handled",
		{manage, "agor-executors.slice", "set-property", "agor"}:                           "not_handled",
		{manage, "ssh.service", "set-property", "agor"}:                                    "not_handled",
		{manage, "agor-executor@alice.service", "set-property", "mallory"}:                 "not_handled",
		{manage, "agor-executor@alice.socket", "start", "mallory"}:                         "not_handled",
		{manage, "agor-env-py313@alice.socket", "start", "agor"}:                           "yes",
		{manage, "agor-env-py313@alice.service", "stop", "agor"}:                           "yes",
		{manage, `agor-env-deb-13@mary\x2djane.socket`, "restart", "agor"}:                 "yes",
		{manage, "agor-env-py313@alice.service", "set-property", "agor"}:                   "yes",
		{manage, "agor-env-py313@alice.socket", "set-property", "agor"}:                    "not_handled",
		{manage, "agor-env-py313@root.socket", "start", "agor"}:                            "not_handled",
		{manage, `agor-env-py313@r\x6fot.service`, "start", "agor"}:                        "not_handled",
		{manage, "agor-env-py313@mary-jane.socket", "start", "agor"}:                       "not_handled",
		{manage, "agor-env-Py@alice.socket", "start", "agor"}:                              "not_handled",
		{manage, "agor-env-@alice.socket", "start", "agor"}:                                "not_handled",
		{manage, "agor-env-py_1@alice.socket", "start", "agor"}:                            "not_handled",
		{manage, "agor-env-" + strings.Repeat("a", 33) + "@alice.socket", "start", "agor"}: "not_handled",
		{manage, "agor-env-py313@alice.socket", "enable", "agor"}:                          "not_handled",
		{manage, "agor-env-py313@alice.socket", "start", "mallory"}:                        "not_handled",
		{manage, "agor-envy@alice.socket", "start", "agor"}:                                "not_handled",
		{"org.freedesktop.login1.reboot", "", "", "agor"}:                                  "not_handled",
	}
	var reqs []request
	for r := range cases {
		reqs = append(reqs, r)
	}
	for i, got := range decide(t, reqs) {
		if want := cases[reqs[i]]; got != want {
			t.Errorf("%+v: %s, want %s", reqs[i], got, want)
		}
	}
}

// TestRuleTakesWhatTheDaemonWrites: every name the daemon accepts, as it
// escapes it, is let through (but root).
func TestRuleTakesWhatTheDaemonWrites(t *testing.T) {
	names := []string{"alice", "Jane", "john.smith", "mary-jane", "jsmith@corp.example", `CORP\jsmith`, ".x", "ünï", "_svc", "2bob", "root"}
	var reqs []request
	for _, n := range names {
		if err := account.ValidName(n); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, request{manage, "agor-executor@" + account.Escape(n) + ".service", "start", "agor"})
	}
	for i, got := range decide(t, reqs) {
		want := "yes"
		if names[i] == "root" {
			want = "not_handled"
		}
		if got != want {
			t.Errorf("%s (%s): %s, want %s", names[i], reqs[i].Unit, got, want)
		}
	}
}
