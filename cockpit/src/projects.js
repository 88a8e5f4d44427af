// A person's projects: the working directories the prompt box offers.
// The daemon's default for a prompt (sandbox.prompts: workspace in the
// packaged configuration) refuses the home directory itself, and
// nothing names a directory outside it, so the box offers only
// directories beneath her home that exist: those her sessions ran in,
// most recent first, then those in her home. Paths are relative to her
// home, as the daemon stores a session's cwd and the executor resolves it.

// homeDir says whether cwd names the home itself (or nothing): the one
// directory the workspace level refuses, so never a project.
export function homeDir(cwd) {
	const c = String(cwd || "").trim().replace(/\/+$/, "");
	return c === "" || c === "." || c === "~" || c === "./";
}

// projectPath is cwd as a project's path beneath the home ("src/app"),
// or "" when it is none: the home, absolute (the page cannot tell
// whether it lies in the home), or leading out of it ("..").
export function projectPath(cwd) {
	if (homeDir(cwd)) return "";
	const c = String(cwd).trim().replace(/^\.\/+/, "").replace(/\/+$/, "");
	if (c.startsWith("/") || c.startsWith("~")) return "";
	const parts = c.split("/").filter(p => p !== "" && p !== ".");
	if (parts.length === 0 || parts.includes("..")) return "";
	return parts.join("/");
}

// recentCwds is the distinct projects of user's sessions, the most
// recently updated first (sessions as GET /v1/sessions lists them; an
// admin's list holds everyone's).
export function recentCwds(sessions, user) {
	const mine = sessions.filter(s => s.unix_user === user)
		.sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)));
	const out = [];
	for (const s of mine) {
		const p = projectPath(s.cwd);
		if (p && !out.includes(p)) out.push(p);
	}
	return out;
}

// homeDirs is the directories a listing of the home holds (GET
// .../files?path=.), hidden ones left out, by name.
export function homeDirs(entries) {
	return (entries || []).filter(e => e.type === "dir")
		.map(e => projectPath(e.path))
		.filter(p => p && !p.startsWith("."))
		.sort();
}

// projects is what the box offers: recent (those that still exist)
// first, then the home's directories not among them.
export function projects(recent, home) {
	const out = [...recent];
	for (const d of home) if (!out.includes(d)) out.push(d);
	return out;
}

// maxChecked bounds the recent directories asked after (one listing
// each): the box offers the newest of them.
export const maxChecked = 8;

// loadProjects asks the daemon for user's projects: list(path) resolves
// to the listing of path beneath her home (and rejects when there is no
// such directory). sessions is her sessions, as the page has them.
export async function loadProjects(list, sessions, user) {
	const recent = recentCwds(sessions, user).slice(0, maxChecked);
	const [home, ...exist] = await Promise.all([
		list(".").then(r => r.entries, () => []),
		...recent.map(p => list(p).then(() => true, () => false)),
	]);
	return projects(recent.filter((_, i) => exist[i]), homeDirs(home));
}
