import { test } from "node:test";
import assert from "node:assert/strict";
import { prewarmer, prewarmBody } from "../src/prewarm.js";

// fakeTimers runs pending timeouts when told.
function fakeTimers() {
	let next = 1;
	const pending = new Map();
	return {
		setTimeout(f) { const id = next++; pending.set(id, f); return id; },
		clearTimeout(id) { pending.delete(id); },
		run() { const fs = [...pending.values()]; pending.clear(); fs.forEach(f => f()); },
	};
}

test("a burst of changes sends the last body once, and the same body not again", async () => {
	const sent = [];
	const timers = fakeTimers();
	const schedule = prewarmer((b) => { sent.push(b); return Promise.resolve(); }, 500, timers);
	schedule(prewarmBody({ tool: "codex", cwd: "", mode: "default" }));
	schedule(prewarmBody({ tool: "gemini", cwd: "src", mode: "plan", sandbox: "workspace" }));
	timers.run();
	schedule(prewarmBody({ tool: "gemini", cwd: "src", mode: "plan", sandbox: "workspace" }));
	timers.run();
	assert.deepEqual(sent, [{ agentic_tool: "gemini", cwd: "src", permission_mode: "plan", sandbox: "workspace" }]);
	schedule(prewarmBody({ tool: "gemini", cwd: "src", mode: "plan", session: "s1" }));
	timers.run();
	assert.equal(sent.length, 2);
	assert.equal(sent[1].session_id, "s1");
	schedule(prewarmBody({ tool: "gemini", cwd: "src", mode: "plan", session: "s1", env: "py" }));
	timers.run();
	assert.equal(sent.length, 3);
	assert.equal(sent[2].environment, "py");
});

test("a failed pre-warm may be sent again", async () => {
	let n = 0;
	const timers = fakeTimers();
	const schedule = prewarmer(() => { n++; return Promise.reject(new Error("no")); }, 500, timers);
	schedule({ a: 1 });
	timers.run();
	await new Promise(r => setTimeout(r, 0));
	schedule({ a: 1 });
	timers.run();
	assert.equal(n, 2);
});
