package gitguard

import (
	"regexp"
	"strings"
)

// Where an entry sits decides what it is. A place is what a directory
// is to the guard; a kind is what a file in it is.

type place uint8

const (
	plain      place = iota // an ordinary directory of the workspace
	inertPlace              // what tools make and read back as data: only repositories count inside
	settings                // configuration a program reads: everything in it counts
	gitTop                  // a git directory: its entries are judged by name
	gitHooks                // a git directory's hooks/
	gitObjects              // objects/
	gitObjInfo              // objects/info/
	gitState                // rebase-merge/, rebase-apply/, sequencer/: an operation in progress
	gitNest                 // worktrees/, modules/: holders of git directories
	gitRemotes              // remotes/, branches/: remotes named the old way, URLs git fetches
	gitInert                // refs/, logs/ and the like: only repositories count inside
)

type kind uint8

const (
	inert      kind = iota
	suspect         // disabled if it changed: nothing tells it runs nothing
	config          // a repository's config: parsed, what is not inert dropped
	gitfile         // a .git file: "gitdir: PATH"
	commondir       // a worktree's common directory
	alternates      // objects/info/alternates: other object directories
	gitmodules      // .gitmodules
	todo            // a rebase's or sequencer's list of commands
	strategy        // a rebase's merge strategy
	seqOpts         // sequencer/opts, in config syntax
	objectID        // a git directory's opencode: an object name alone
)

// inertDots are names beginning with "." that hold no commands and name
// none: git's own data files, editors' plain formatting, runtime version
// pins (a tool installs that version when asked), CI read by a forge on
// push (nothing local runs it), and our own disabled names.
var inertDots = set(".gitignore", ".gitkeep", ".gitattributes", ".keep", ".mailmap", ".editorconfig",
	".nvmrc", ".node-version", ".python-version", ".ruby-version", ".dockerignore", ".npmignore",
	".prettierignore", ".eslintignore", ".DS_Store", ".github", ".gitlab", ".gitlab-ci.yml",
	".coverage", ".eslintcache")

// inertPlaces are what package managers, builds and test runners make
// in a project and read back as data, or as the project's own code when
// she runs that tool (asked, as running the project is): vendored
// packages (whose own dotfiles are their published content, which no
// tool reads as this project's settings, and which would otherwise be
// disabled by every install), virtual environments, caches, build
// outputs' bookkeeping. Repositories still count inside: git finds one
// wherever she runs it.
var inertPlaces = set("node_modules", ".venv", "venv", "__pycache__", ".pytest_cache", ".mypy_cache",
	".ruff_cache", ".hypothesis", ".tox", ".nox", ".cache", ".eggs", ".gradle", ".terraform", ".next",
	".nuxt", ".svelte-kit", ".turbo", ".parcel-cache", ".vite", ".angular", ".nyc_output", ".docusaurus",
	".fingerprint", ".rustc_info.json", ".cargo-lock", ".package-lock.json", ".bin", ".pnpm", ".yarn")

// settingsNames are project settings whose names do not begin with "."
// and that a program reads when started in the directory, or when she
// commits: the agent CLIs', mise's, lefthook's (which her hooks run).
var settingsNames = set("opencode.json", "opencode.jsonc", "mise.toml", "mise.local.toml",
	"lefthook.yml", "lefthook.yaml", "lefthook-local.yml", "lefthook-local.yaml")

// gitInertNames are a git directory's entries that hold data only: refs,
// objects, the index, logs, messages, the state git keeps between
// commands that names no command.
var gitInertNames = set("HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "MERGE_MODE", "MERGE_MSG",
	"MERGE_RR", "MERGE_AUTOSTASH", "SQUASH_MSG", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD",
	"AUTO_MERGE", "COMMIT_EDITMSG", "TAG_EDITMSG", "EDIT_DESCRIPTION", "NOTES_EDITMSG",
	"NOTES_MERGE_PARTIAL", "NOTES_MERGE_REF", "NOTES_MERGE_WORKTREE", "description", "index",
	"packed-refs", "shallow", "gc.pid", "gc.log", "refs", "logs", "info", "rr-cache", "lfs",
	"reftable", "gitk.cache", "gitdir", "objects")

// stateNames are the files a rebase or a cherry-pick keeps that hold
// data only; the command lists are judged (kindOf).
var stateNames = set("head-name", "onto", "orig-head", "interactive", "msgnum", "end", "message",
	"author-script", "amend", "stopped-sha", "rewritten-list", "rewritten-pending", "current-fixups",
	"squash-onto", "keep-redundant-commits", "allow-rerere-autoupdate", "quiet", "verbose", "signoff",
	"no-reschedule-failed-exec", "reschedule-failed-exec", "drop_redundant_commits",
	"keep_redundant_commits", "autostash", "patch", "refs-to-update", "strategy_opts", "gpg_sign_opt",
	"cdate_is_adate", "ignore_date", "message-squash", "message-fixup", "final-commit", "head",
	"abort-safety", "next", "last", "info", "keep", "threeway", "sign", "utf8", "scissors",
	"messageid", "apply-opt", "original-commit", "applying", "rebasing", "patch-merge-message",
	"msg", "dirtyindex", "quoted-cr", "empty", "git-rebase-todo.rearranged")

// disabledRE matches a name the guard gave (NAME.agor-disabled, .N).
var disabledRE = regexp.MustCompile(`\` + Disabled + `(\.[0-9]+)?$`)

func disabledName(name string) bool { return disabledRE.MatchString(name) }

// placeOf is what a directory named name in a directory of place p is,
// by its name (a directory git would take for a git directory is gitTop
// whatever its name: isGitDir).
func placeOf(p place, name string) place {
	switch p {
	case settings, gitHooks, gitState, gitRemotes:
		return settings
	case gitInert, gitObjInfo:
		return gitInert
	case gitNest:
		return gitNest
	case gitObjects:
		if name == "info" {
			return gitObjInfo
		}
		return gitInert
	case gitTop:
		return gitPlace(name)
	}
	switch {
	case name == ".git":
		return gitTop
	case p == inertPlace || disabledName(name) || inertPlaces[name]:
		return inertPlace
	case strings.HasPrefix(name, ".") && !inertDots[name], settingsNames[name]:
		return settings
	}
	return p
}

// gitPlace is what a directory in a git directory is.
func gitPlace(name string) place {
	switch name {
	case "hooks":
		return gitHooks
	case "objects":
		return gitObjects
	case "rebase-merge", "rebase-apply", "sequencer":
		return gitState
	case "worktrees", "modules":
		return gitNest
	case "remotes", "branches":
		return gitRemotes
	}
	if gitInertNames[name] || disabledName(name) {
		return gitInert
	}
	return settings // what git does not make
}

// kindOf is what a file (anything but a directory) named name in a
// directory of place p is.
func kindOf(p place, name string) kind {
	if disabledName(name) {
		return inert
	}
	switch p {
	case settings, gitHooks, gitRemotes:
		if p == gitHooks && strings.HasSuffix(name, ".sample") {
			return inert
		}
		return suspect
	case gitTop:
		return gitKind(name)
	case gitObjInfo:
		return map[string]kind{"alternates": alternates, "http-alternates": suspect}[name]
	case gitState:
		return stateKind(name)
	case gitObjects, gitNest, gitInert:
		return inert
	}
	switch {
	case name == ".git":
		return gitfile
	case p == inertPlace || inertPlaces[name]:
		return inert
	case name == ".gitmodules":
		return gitmodules
	case strings.HasPrefix(name, ".") && !inertDots[name], settingsNames[name]:
		return suspect
	}
	return inert
}

func gitKind(name string) kind {
	switch {
	case name == "config" || name == "config.worktree":
		return config
	case name == "commondir":
		return commondir
	case name == "opencode":
		// opencode (one of the agent CLIs) keeps its project id there,
		// the repository's root commit, written on its first run in a
		// repository; git never reads it.
		return objectID
	case gitInertNames[name] || strings.HasSuffix(name, ".lock") || strings.HasPrefix(name, "sharedindex."):
		return inert
	}
	return suspect // BISECT_*, and what git does not make
}

func stateKind(name string) kind {
	switch {
	case name == "git-rebase-todo" || name == "git-rebase-todo.backup" || name == "done" || name == "todo":
		return todo
	case name == "strategy":
		return strategy
	case name == "opts":
		return seqOpts
	case stateNames[name] || strings.Trim(name, "0123456789") == "":
		return inert // rebase-apply's numbered patches among them
	}
	return suspect
}

// isGitDir says whether git would take a directory holding these names
// for a git directory (setup.c's is_git_directory: HEAD, and objects and
// refs or a commondir naming where they are).
func isGitDir(names map[string]bool) bool {
	return names["HEAD"] && (names["objects"] && names["refs"] || names["commondir"])
}
