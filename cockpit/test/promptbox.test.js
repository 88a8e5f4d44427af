import { test } from "node:test";
import assert from "node:assert/strict";
import { all } from "./shim.js";

// A bridge to a fake daemon: alice's sessions and home, her prompts kept.
const sent = [];
globalThis.cockpit.http = () => ({
	request({ method, path, body }) {
		const reply = (() => {
			if (path.startsWith("/v1/sessions?")) return { sessions: [{ id: "s1", unix_user: "alice", cwd: ".", agentic_tool: "claude-code", updated_at: "2026-11-02T00:00:00Z" }, { id: "s2", unix_user: "alice", cwd: "src/app", agentic_tool: "claude-code", updated_at: "2026-11-01T00:00:00Z" }] };
			if (path === "/v1/permissions") return { permissions: [] };
			if (path.startsWith("/v1/executors/alice/files?path=.&")) return { entries: [{ path: "notes", type: "dir" }, { path: ".config", type: "dir" }] };
			if (path.startsWith("/v1/executors/alice/files?path=src%2Fapp&")) return { entries: [] };
			if (method === "POST") { sent.push({ path, body: JSON.parse(body) }); return null; }
			return undefined;
		})();
		const p = {
			then(ok, fail) {
				setTimeout(() => (reply === undefined ? fail({ status: 404, message: "not found" }, "") : ok(reply === null ? "" : JSON.stringify(reply))), 0);
				return p;
			},
			response() { return p; },
			stream() { return p; },
			close() {},
		};
		return p;
	},
});
const { sessionsView } = await import("../src/sessions.js");

// until waits for pred to hold (the page's requests answer a timer tick
// apart), for a few seconds at most; what the test then asserts says why.
async function until(pred) {
	for (let i = 0; i < 400 && !pred(); i++) await new Promise(r => setTimeout(r, 10));
}
const named = (el, tag, name) => all(el, n => n.tagName === tag && n.getAttribute("name") === name)[0];

// The page's working directory starts at a project of hers that exists
// (her newest session's, never its "."), which the daemon's default,
// sandbox.prompts: workspace, accepts; the old page started at ".".
test("the working directory starts at one of her projects, never the home", async () => {
	const v = sessionsView({ name: "alice", admin: false });
	v.show();
	const cwd = named(v.el, "INPUT", "cwd");
	await until(() => cwd.getAttribute("data-projects") !== null);
	v.hide();
	assert.equal(cwd.value, "src/app");
	const offered = all(v.el, n => n.tagName === "OPTION" && n.parentNode && n.parentNode.tagName === "DATALIST").map(o => o.value);
	assert.deepEqual(offered, ["src/app", "notes"]);
	named(v.el, "TEXTAREA", "prompt").value = "fix the test";
	all(v.el, n => n.getAttribute("id") === "agor-send")[0].click();
	await until(() => sent.some(s => s.path === "/v1/executors/alice/prompt"));
	const prompts = sent.filter(s => s.path === "/v1/executors/alice/prompt");
	assert.equal(prompts.length, 1);
	assert.equal(prompts[0].body.cwd, "src/app");
});

// With nothing to offer, the box sends nothing and says what to do.
test("no project: nothing sent, the box says to make one", async () => {
	sent.length = 0;
	const v = sessionsView({ name: "nobody", admin: false });
	v.show();
	const cwd = named(v.el, "INPUT", "cwd");
	await until(() => cwd.getAttribute("data-projects") !== null);
	v.hide();
	assert.equal(cwd.value, "");
	named(v.el, "TEXTAREA", "prompt").value = "hello";
	all(v.el, n => n.getAttribute("id") === "agor-send")[0].click();
	await until(() => /Choose a working directory/.test(v.el.textContent));
	assert.match(v.el.textContent, /Choose a working directory/);
	assert.equal(sent.filter(s => s.path.endsWith("/prompt")).length, 0);
});
