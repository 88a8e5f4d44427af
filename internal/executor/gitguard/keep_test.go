package gitguard

import (
	"strings"
	"testing"
)

// TestKeep: what a repository's config keeps is what describes the
// repository; every key that names a program, more configuration, or a
// transport that runs one is dropped, whatever its spelling.
func TestKeep(t *testing.T) {
	kept := []string{
		"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = true\n",
		"[extensions]\n\tobjectformat = sha256\n",
		"[remote \"origin\"]\n\turl = https://example.invalid/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
		"[remote \"o\"]\n\turl = git@example.invalid:r.git\n\tpushurl = ssh://git@example.invalid/r\n",
		"[remote \"o\"]\n\turl = ../local/path\n",
		"[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n",
		"[submodule \"lib\"]\n\turl = https://example.invalid/lib\n\tupdate = rebase\n\tactive = true\n",
		"[user]\n\tname = A\n\temail = a@example.invalid\n[init]\n\tdefaultBranch = main\n",
	}
	for _, c := range kept {
		if _, dropped, err := keep([]byte(c), inertKeys); err != nil || len(dropped) > 0 {
			t.Errorf("%q: dropped %q (%v)", c, dropped, err)
		}
	}
	dropped := []string{
		"[core]\n\tfsmonitor = x\n", "[core]\n\thooksPath = /tmp\n", "[core]\n\tsshCommand = x\n",
		"[core]\n\tpager = x\n", "[core]\n\teditor = x\n", "[core]\n\tgitProxy = x\n",
		"[core]\n\talternateRefsCommand = x\n", "[core]\n\tworktree = /home\n", "[core]\n\tattributesFile = x\n",
		"[pager]\n\tstatus = x\n", "[gpg \"ssh\"]\n\tprogram = x\n", "[gpg]\n\tprogram = x\n",
		"[credential]\n\thelper = x\n", "[diff \"x\"]\n\ttextconv = x\n", "[filter \"x\"]\n\tclean = x\n",
		"[merge \"x\"]\n\tdriver = x\n", "[include]\n\tpath = x\n", "[includeIf \"gitdir:/\"]\n\tpath = x\n",
		"[alias]\n\tst = !x\n", "[url \"ext::sh -c x\"]\n\tinsteadOf = https://\n", "[interactive]\n\tdiffFilter = x\n",
		"[remote \"o\"]\n\tuploadpack = x\n", "[remote \"o\"]\n\treceivepack = x\n", "[remote \"o\"]\n\tvcs = x\n",
		"[remote \"o\"]\n\turl = ext::sh -c x\n", "[remote \"o\"]\n\turl = fd::0\n", "[remote \"o\"]\n\turl = evil://x\n",
		"[remote \"o\"]\n\turl = -oProxyCommand=x\n", "[remote \"o\"]\n\turl = ssh://-oProxyCommand=x/r\n",
		"[remote \"o\"]\n\turl = -x:r\n", "[submodule \"x\"]\n\tupdate = !sh\n", "[sequence]\n\teditor = x\n",
		"[uploadpack]\n\tpackObjectsHook = x\n", "[protocol]\n\tallow = always\n", "[remote]\n\turl = x\n",
		"[core \"x\"]\n\tbare = false\n", "k = v\n",
	}
	for _, c := range dropped {
		if _, d, err := keep([]byte(c), inertKeys); err != nil || len(d) != 1 {
			t.Errorf("%q: kept, dropped %q (%v)", c, d, err)
		}
		end := strings.IndexByte(c, ']') + 1
		upper := strings.ToUpper(c[:end]) + c[end:] // section names are case-insensitive
		if _, d, err := keep([]byte(upper), inertKeys); err == nil && len(d) != 1 {
			t.Errorf("%q: kept", upper)
		}
	}
}
