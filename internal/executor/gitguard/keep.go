package gitguard

import (
	"fmt"
	"regexp"
	"strings"
)

// What a repository's configuration may keep, decided by what it is, not
// by a list of what is dangerous: git has hundreds of keys, and any that
// names a program, a file to read more configuration from or a transport
// would run something later. These keys only describe the repository
// (its format, where its remotes are, which branch follows which, who
// commits): "section.key", or "section.*.key" for any subsection.
var inertKeys = set(
	// The repository's format and how its work tree is read.
	"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
	"core.ignorecase", "core.symlinks", "core.precomposeunicode", "core.autocrlf", "core.eol",
	"core.safecrlf", "core.quotepath", "core.sparsecheckout", "core.sparsecheckoutcone",
	"core.abbrev", "core.untrackedcache", "core.splitindex", "core.commitgraph",
	"core.multipackindex", "core.sharedrepository", "core.warnambiguousrefs", "core.compression",
	"core.loosecompression", "core.checkstat", "core.trustctime", "index.version",
	"extensions.objectformat", "extensions.compatobjectformat", "extensions.worktreeconfig",
	"extensions.refstorage", "extensions.partialclone", "extensions.preciousobjects", "extensions.noop",
	"lfs.repositoryformatversion",
	// Remotes and branches (a URL is judged by urlRuns).
	"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.tagopt",
	"remote.*.mirror", "remote.*.prune", "remote.*.prunetags", "remote.*.promisor",
	"remote.*.partialclonefilter", "remote.*.skipdefaultupdate", "remote.*.skipfetchall",
	"branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote", "branch.*.description",
	"submodule.*.url", "submodule.*.path", "submodule.*.active", "submodule.*.branch",
	"submodule.*.update", "submodule.*.fetchrecursesubmodules", "submodule.*.ignore", "submodule.*.shallow",
	// Who commits, and plain choices of how ordinary commands behave.
	"user.name", "user.email", "init.defaultbranch", "pull.rebase", "pull.ff", "fetch.prune",
	"push.default", "push.autosetupremote", "rebase.autosquash", "rebase.autostash", "rerere.enabled",
	"gc.auto",
)

// inertModules is what .gitmodules may hold: git copies url and update
// into the repository's config on submodule init, and ignores a command
// there.
var inertModules = set("submodule.*.path", "submodule.*.url", "submodule.*.branch", "submodule.*.update",
	"submodule.*.fetchrecursesubmodules", "submodule.*.ignore", "submodule.*.shallow")

// inertOpts is what a cherry-pick's or revert's sequencer/opts may hold.
var inertOpts = set("options.mainline", "options.allow-ff", "options.signoff", "options.record-origin",
	"options.allow-rerere-auto", "options.keep-redundant-commits", "options.drop-redundant-commits",
	"options.allow-empty", "options.allow-empty-message", "options.edit", "options.no-commit",
	"options.default-msg-cleanup", "options.gpg-sign", "options.strategy", "options.strategy-option")

// builtinStrategies are the merge strategies git has in itself; another
// name runs git-merge-NAME, a program.
var builtinStrategies = set("ort", "recursive", "resolve", "octopus", "ours", "subtree")

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// allowedBy says whether allow (inertKeys and the like) keeps s.
func allowedBy(allow map[string]bool, s setting) bool {
	section, sub, key := s.parts()
	if section == "" {
		return false
	}
	name := section + "." + key
	if sub != "" || strings.Count(s.name, ".") > 1 {
		name = section + ".*." + key
	}
	if !allow[name] {
		return false
	}
	switch key {
	case "url", "pushurl":
		return urlRuns(s.value) == ""
	case "update":
		return !s.hasValue || set("checkout", "rebase", "merge", "none")[s.value]
	case "strategy":
		return builtinStrategies[s.value]
	}
	return true
}

// schemes are the transports git speaks itself (a URL of another scheme,
// or TRANSPORT::ADDRESS, runs git-remote-TRANSPORT).
var schemes = set("http", "https", "ssh", "git", "file", "ftp", "ftps", "git+ssh", "ssh+git")

var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://([^/]*)`)

// urlRuns says why git would run something for this remote URL, or "".
func urlRuns(u string) string {
	switch {
	case strings.Contains(u, "::"):
		return "a remote helper (TRANSPORT::ADDRESS runs git-remote-TRANSPORT)"
	case strings.ContainsAny(u, "\n\r\x00"):
		return "a line break in a URL"
	case strings.HasPrefix(u, "-"):
		return "a URL that is an option"
	}
	m := schemeRE.FindStringSubmatch(u)
	if m == nil {
		host, _, scp := strings.Cut(u, ":")
		if scp && !strings.Contains(host, "/") && strings.HasPrefix(host[strings.LastIndexByte(host, '@')+1:], "-") {
			return "a host that is an option"
		}
		return "" // a path, or host:path over ssh
	}
	if !schemes[strings.ToLower(m[1])] {
		return fmt.Sprintf("the transport %q (runs git-remote-%s)", m[1], m[1])
	}
	if host := m[2][strings.LastIndexByte(m[2], '@')+1:]; strings.HasPrefix(host, "-") {
		return "a host that is an option"
	}
	return ""
}

// keep parses a config and splits it into what allow keeps and what it
// drops (each "name = value", for the report).
func keep(data []byte, allow map[string]bool) (kept []setting, dropped []string, err error) {
	all, err := parseConfig(data)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range all {
		if allowedBy(allow, s) {
			kept = append(kept, s)
			continue
		}
		d := s.name
		if s.hasValue {
			d += " = " + s.value
		}
		dropped = append(dropped, d)
	}
	return kept, dropped, nil
}
