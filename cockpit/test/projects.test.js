import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { homeDir, projectPath, recentCwds, homeDirs, loadProjects } from "../src/projects.js";

// The page's old default, ".", is the home: the one directory the
// daemon's default for prompts (sandbox.prompts: workspace) refuses.
test("the home is never a project", () => {
	for (const c of [".", "", "~", "./", " . ", "/"]) {
		assert.equal(projectPath(c), "", JSON.stringify(c));
	}
	assert.ok(homeDir(".") && homeDir("") && !homeDir("src"));
	assert.equal(projectPath("src/app/"), "src/app");
	assert.equal(projectPath("./src//app"), "src/app");
	for (const c of ["/home/alice/src", "~/src", "../bob", "src/../.."]) assert.equal(projectPath(c), "", c);
});

test("her sessions' directories, newest first, once each, hers only", () => {
	const sessions = [
		{ unix_user: "alice", cwd: "src/old", updated_at: "2026-11-01T10:00:00Z" },
		{ unix_user: "alice", cwd: ".", updated_at: "2026-11-03T10:00:00Z" },
		{ unix_user: "bob", cwd: "bobs", updated_at: "2026-11-04T10:00:00Z" },
		{ unix_user: "alice", cwd: "src/app", updated_at: "2026-11-02T10:00:00Z" },
		{ unix_user: "alice", cwd: "src/old/", updated_at: "2026-11-02T09:00:00Z" },
	];
	assert.deepEqual(recentCwds(sessions, "alice"), ["src/app", "src/old"]);
});

test("the home's directories, hidden ones and files left out", () => {
	const entries = [{ path: "src", type: "dir" }, { path: ".cache", type: "dir" }, { path: "notes.txt", type: "file" }, { path: "proj", type: "dir" }, { path: "link", type: "symlink" }];
	assert.deepEqual(homeDirs(entries), ["proj", "src"]);
	assert.deepEqual(homeDirs(undefined), []);
});

// A fake of GET .../files: listing the home, and refusing what is gone.
function lister(dirs, home) {
	const asked = [];
	return {
		asked,
		list: async (p) => {
			asked.push(p);
			if (p === ".") return { entries: home };
			if (!dirs.includes(p)) throw new Error("no such directory");
			return { entries: [] };
		},
	};
}

test("recent that still exist first, then the home's; the default is accepted", async () => {
	const sessions = [
		{ unix_user: "alice", cwd: "gone", updated_at: "2026-11-05T10:00:00Z" },
		{ unix_user: "alice", cwd: "src/app", updated_at: "2026-11-04T10:00:00Z" },
		{ unix_user: "alice", cwd: ".", updated_at: "2026-11-06T10:00:00Z" },
	];
	const l = lister(["src/app", "src", "proj"], [{ path: "src", type: "dir" }, { path: "proj", type: "dir" }]);
	const got = await loadProjects(l.list, sessions, "alice");
	assert.deepEqual(got, ["src/app", "proj", "src"]);
	assert.ok(!homeDir(got[0]));
	assert.deepEqual(l.asked.sort(), [".", "gone", "src/app"]);
});

test("no executor, no directory: nothing offered (the box says what to do)", async () => {
	const got = await loadProjects(async () => { throw new Error("executor unavailable"); }, [{ unix_user: "alice", cwd: "x", updated_at: "" }], "alice");
	assert.deepEqual(got, []);
});

test("every string of the prompt box and its projects has its German", () => {
	const po = readFileSync(new URL("../po/de.po", import.meta.url), "utf8");
	const ids = new Set([...po.matchAll(/^msgid (".*")$/gm)].map(m => JSON.parse(m[1])));
	const src = readFileSync(new URL("../src/sessions.js", import.meta.url), "utf8");
	for (const s of ["a project in your home, e.g. src/app", "Choose a working directory: a project in your home (none yet: make one, e.g. mkdir -p ~/src/app in the terminal)."]) {
		assert.ok(src.includes(JSON.stringify(s)), `sessions.js says ${s}`);
		assert.ok(ids.has(s), `${JSON.stringify(s)} is not in po/de.po`);
	}
});
