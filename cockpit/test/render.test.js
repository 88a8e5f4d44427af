// The page's reading of a task's stream: what it shows must be what the
// daemon sent, in order, whatever the chunking.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { newTranscript, applyLine, applySSE, Lines, SSE, clip, usageFromMetrics, resumable } from "../src/render.js";

const ev = (seq, type, data) => ({ event: { task_id: "t1", sequence: seq, timestamp: 0, event_type: type, event_data: { type, data } } });

// The wire's golden files (internal/wire/apiwire/testdata), which the Go
// tests pin and agorctl's renderer reads too (TestRendersWireStream): one
// default-mode Claude Code turn as POST /v1/executors/alice/prompt
// streams it, the daemon's error, a result line the daemon recorded
// otherwise (incomplete).
const wire = (name) => JSON.parse(readFileSync(new URL(`../../internal/wire/apiwire/testdata/${name}.json`, import.meta.url), "utf8"));
const turn = wire("prompt_stream");

test("a turn renders as agorctl prompt shows it: text, tool call, question, answer, result, summary", () => {
	const t = newTranscript();
	for (const l of turn) applyLine(t, l);
	assert.equal(t.task, "t1");
	assert.equal(t.session, "s1");
	assert.deepEqual(t.blocks.map(b => b.kind), ["text", "tool", "ask", "decided", "result", "text"]);
	assert.equal(t.blocks[0].text, "I'll run it.");
	assert.equal(t.blocks[1].name, "Bash");
	assert.equal(t.blocks[1].input, "id -un > whoami.txt");
	assert.equal(t.blocks[3].approved, true);
	assert.equal(t.blocks[4].output, "alice\n");
	assert.equal(t.blocks[5].text, "Done.");
	assert.equal(t.status, "completed");
	assert.equal(t.summary.tokensIn, 12);
	assert.equal(t.summary.tokensOut, 7);
});

test("the daemon's error is kept as worded", () => {
	const t = newTranscript();
	applyLine(t, { error: wire("error") });
	assert.equal(t.error, "you may act only as yourself");
	assert.equal(t.status, "failed");
});

test("a result the daemon recorded otherwise shows its status and warning, as agorctl does", () => {
	const t = newTranscript();
	for (const l of turn.slice(0, -1)) applyLine(t, l);
	applyLine(t, { ...turn[turn.length - 1], ...wire("prompt_line") });
	assert.equal(t.status, "incomplete");
	assert.deepEqual(t.summary.warnings, ["2 of the agent's events were not stored"]);
});

test("a replay overlapping the live stream shows each event once", () => {
	const t = newTranscript();
	for (const l of turn.slice(0, 6)) applyLine(t, l);
	for (const l of turn.slice(1)) applyLine(t, l); // replayed from the start
	assert.deepEqual(t.blocks.map(b => b.kind), ["text", "tool", "ask", "decided", "result", "text"]);
	assert.equal(t.blocks[0].text, "I'll run it.");
});

test("long inputs and outputs are clipped as agorctl clips them", () => {
	assert.equal(clip("x".repeat(5), 3), "xxx…");
	const t = newTranscript();
	applyLine(t, ev(1, "tool_result", { tool_use_id: "u", output: "y".repeat(1000) }));
	assert.equal(t.blocks[0].output.length, 401);
});

test("NDJSON split anywhere gives the same lines", () => {
	const text = turn.map(l => JSON.stringify(l)).join("\n") + "\n";
	for (const size of [1, 7, 64, text.length]) {
		const lines = new Lines();
		const got = [];
		for (let i = 0; i < text.length; i += size) got.push(...lines.push(text.slice(i, i + size)));
		assert.equal(got.length, turn.length, `chunks of ${size}`);
		assert.deepEqual(JSON.parse(got[5]), turn[5]);
	}
});

test("a line over the bound is an error, not unbounded memory", () => {
	const lines = new Lines(10);
	assert.throws(() => lines.push("x".repeat(11)), /more than 10 bytes/);
});

test("the events stream (SSE) replays to the same transcript and ends with the status", () => {
	let text = "";
	for (const l of turn.filter(l => l.event)) text += `id: ${l.event.sequence}\nevent: ${l.event.event_type}\ndata: ${JSON.stringify(l.event)}\n\n`;
	text += "event: end\ndata: completed\n\n";
	for (const size of [3, text.length]) {
		const sse = new SSE();
		const t = newTranscript();
		for (let i = 0; i < text.length; i += size) for (const m of sse.push(text.slice(i, i + size))) applySSE(t, m);
		assert.deepEqual(t.blocks.map(b => b.kind), ["text", "tool", "ask", "decided", "result", "text"]);
		assert.equal(t.status, "completed");
	}
});

test("usage is read from the metrics per person", () => {
	const u = usageFromMetrics('# HELP x\nagor_executor_memory_bytes{user="alice"} 1048576\nagor_executor_tasks{user="alice"} 4\nagor_executor_cpu_seconds_total{user="bob"} 1.5\n');
	assert.deepEqual(u, { alice: { memory_bytes: 1048576, tasks: 4 }, bob: { cpu_seconds_total: 1.5 } });
});

test("a .po file becomes the po.LANG.js Cockpit serves: cockpit.locale with each translation", async () => {
	const { poToCockpit } = await import("../src/po.js");
	const js = poToCockpit('msgid ""\nmsgstr ""\n"Language: de\\n"\n\nmsgid "Sessions"\nmsgstr "Sitzungen"\n\nmsgid "a "\n"b"\nmsgstr "c"\n', "de");
	let got;
	new Function("cockpit", js)({ locale: (d) => { got = d; } });
	assert.deepEqual(got.Sessions, [null, "Sitzungen"]);
	assert.deepEqual(got["a b"], [null, "c"]);
	assert.equal(got[""].language, "de");
	assert.equal(got[""]["plural-forms"](2), 1);
});

// What the daemon relays comes from agents: whatever shape an event has,
// the page shows what it can and never throws.
test("events of any shape never throw (random inputs)", () => {
	let seed = 42;
	const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
	const values = [null, undefined, 0, -1, "", "x", [], {}, [1, "a"], { text: 5 }, true, "\u0000", 1e308];
	const types = ["text_delta", "thinking_delta", "message_stop", "tool_call", "tool_result", "permission_asked", "permission_decided", "error", "sandbox", "usage", "nonsense"];
	const pick = (a) => a[rnd(a.length)];
	for (let i = 0; i < 5000; i++) {
		const t = newTranscript();
		const data = {};
		for (const k of ["text", "tool_name", "tool_input", "output", "is_error", "approved", "reason", "message", "warning", "level"]) if (rnd(2)) data[k] = pick(values);
		const shapes = [pick(values), { event: pick(values) }, { event: { sequence: pick(values), event_data: pick(values) } },
			{ event: { sequence: i, event_type: pick(types), event_data: { type: pick(types), data: rnd(3) ? data : pick(values) } } },
			{ result: pick(values) }, { error: pick(values) }, { task_id: pick(values) }];
		assert.doesNotThrow(() => applyLine(t, pick(shapes)));
		const sse = new SSE();
		assert.doesNotThrow(() => { for (const m of sse.push(`event: ${pick(types)}\ndata: ${String(pick(values))}\n\n`)) applySSE(t, m); });
	}
});

test("a stream that ends before its result is followed on; one with a result or the daemon's error is not", () => {
	const t = newTranscript();
	for (const l of turn.slice(0, 3)) applyLine(t, l);
	assert.equal(resumable(t), true);
	const last = t.last;
	applySSE(t, { event: "message", id: String(last), data: JSON.stringify(turn[2].event) }); // the follow's replay overlaps
	assert.equal(t.last, last);
	const done = newTranscript();
	for (const l of turn) applyLine(done, l);
	assert.equal(resumable(done), false);
	const failed = newTranscript();
	applyLine(failed, { task_id: "t1", session_id: "s1" });
	applyLine(failed, { error: wire("error") });
	assert.equal(resumable(failed), false);
	assert.equal(resumable(newTranscript()), false);
});

test("a notice from the daemon (a budget nearly spent) shows as a warning, worded as sent", () => {
	const t = newTranscript();
	const message = "agor: 80% of the monthly budget of 20.00 USD is spent (16.10 USD), resets 2026-12-01";
	applyLine(t, { event: { sequence: 3, event_type: "notice", event_data: { type: "notice", data: { code: "budget", message } } } });
	assert.deepEqual(t.blocks.map(b => [b.kind, b.message, b.agor]), [["warning", message, "notice"]]);
});
