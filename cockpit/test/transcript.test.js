// The transcript drawn as it grows: the same page as drawing it whole,
// each event's cost once, draws coalesced, and a long turn (5,000
// events) timed through the page's own path (applyLine or applySSE, then
// the view). The times are printed, never asserted.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { made, agor } from "./shim.js";
import { newTranscript, applyLine, applySSE, SSE, Lines } from "../src/render.js";
import { transcriptView, blockNode } from "../src/transcript.js";

const turn = JSON.parse(readFileSync(new URL("../../internal/wire/apiwire/testdata/prompt_stream.json", import.meta.url), "utf8"));
const ev = (seq, type, data) => ({ event: { task_id: "t1", sequence: seq, timestamp: 0, event_type: type, event_data: { type, data } } });

// longTurn is a turn of n events as an agent streams one: thinking,
// text in small deltas, tool calls and their results, a question now
// and then, a notice.
function longTurn(n) {
	const out = [{ task_id: "t1", session_id: "s1" }];
	let seq = 0;
	const add = (type, data) => { if (seq < n) out.push(ev(++seq, type, data)); };
	for (let i = 0; seq < n; i++) {
		add("thinking_delta", { text: `step ${i}: ` });
		add("message_stop", {});
		for (let j = 0; j < 8; j++) add("text_delta", { text: `word${j} of step ${i} ` });
		add("message_stop", {});
		const id = `u${i}`;
		if (i % 3 === 0) add("tool_call", { tool_use_id: id, tool_name: "Edit", tool_input: { file_path: `src/f${i}.go`, old_string: `x := ${i}`, new_string: `x := ${i + 1}` } });
		else add("tool_call", { tool_use_id: id, tool_name: "Bash", tool_input: { command: `grep -n step${i} *.go`, description: `find step ${i}` } });
		if (i % 50 === 0) {
			add("permission_asked", { tool_use_id: id, tool_name: "Bash", tool_input: { command: `rm -f tmp${i}` } });
			add("permission_decided", { tool_name: "Bash", approved: true, reason: "ok" });
		}
		add("tool_result", { tool_use_id: id, output: `f${i}.go:${i}: step${i}\n`.repeat(3), is_error: i % 17 === 0 });
		if (i === 10) add("notice", { code: "budget", message: "agor: 80% of the monthly budget is spent" });
	}
	return out;
}

// whole is the transcript drawn at once, as the page did on every event.
const whole = (t) => t.blocks.map(blockNode);
const shape = (nodes) => nodes.map(n => [n.tagName, n.className, n.getAttribute("data-agor"), n.textContent]);

test("drawn as it grows, event by event, the transcript is the one drawn whole", () => {
	for (const lines of [turn, longTurn(400)]) {
		const el = document.createElement("div");
		const view = transcriptView(el, { schedule: () => {} });
		const t = newTranscript();
		for (const l of lines) {
			applyLine(t, l);
			view.show(t);
			view.flush();
		}
		assert.deepEqual(shape(el.childNodes), shape(whole(t)));
	}
});

test("a text block takes its deltas in one text node; each block is made once", () => {
	const el = document.createElement("div");
	const view = transcriptView(el, { schedule: () => {} });
	const t = newTranscript();
	applyLine(t, ev(1, "text_delta", { text: "a" }));
	view.show(t);
	view.flush();
	const node = el.firstChild.firstChild;
	const before = { ...made };
	for (let i = 2; i < 1000; i++) {
		applyLine(t, ev(i, "text_delta", { text: "b" }));
		view.show(t);
		view.flush();
	}
	assert.deepEqual(made, before, "no node made for a delta");
	assert.equal(el.childNodes.length, 1);
	assert.equal(el.firstChild.firstChild, node);
	assert.equal(node.data, "a" + "b".repeat(998));
});

test("draws are coalesced: many events, one draw a frame", () => {
	const el = document.createElement("div");
	const frames = [];
	const view = transcriptView(el, { schedule: (f) => frames.push(f) });
	const t = newTranscript();
	for (const l of turn) {
		applyLine(t, l);
		view.show(t);
	}
	assert.equal(frames.length, 1);
	assert.equal(el.childNodes.length, 0, "nothing drawn before the frame");
	frames.shift()();
	assert.equal(el.childNodes.length, t.blocks.length);
	assert.equal(view.stats.draws, 1);
	view.show(t);
	assert.equal(frames.length, 1, "the next event asks for the next frame");
});

test("another task's transcript starts the view afresh", () => {
	const el = document.createElement("div");
	const view = transcriptView(el, { schedule: () => {} });
	const a = newTranscript();
	for (const l of turn) applyLine(a, l);
	view.show(a);
	view.flush();
	const b = newTranscript();
	applyLine(b, ev(1, "text_delta", { text: "other" }));
	view.show(b);
	view.flush();
	assert.deepEqual(shape(el.childNodes), shape(whole(b)));
});

test("the view follows the end while the person is there, and stays where they scrolled to", () => {
	const el = document.createElement("div");
	const view = transcriptView(el, { schedule: () => {} });
	const t = newTranscript();
	// As layout would make it: 100 pixels shown, 100 a block.
	el.clientHeight = 100;
	Object.defineProperty(el, "scrollHeight", { get: () => 100 * Math.max(1, el.childNodes.length) });
	for (let i = 1; i <= 3; i++) {
		applyLine(t, ev(i, "tool_call", { tool_name: "Bash", tool_input: { command: "ls" } }));
		view.show(t);
		view.flush();
		assert.equal(el.scrollTop, 100 * i, "at the end");
	}
	el.scrollTop = 50; // the person scrolled up
	applyLine(t, ev(4, "tool_call", { tool_name: "Bash", tool_input: { command: "ls" } }));
	view.show(t);
	view.flush();
	assert.equal(el.scrollTop, 50);
});

test("the marks the browser check looks for are on the blocks", () => {
	const el = document.createElement("div");
	const view = transcriptView(el, { schedule: () => {} });
	const t = newTranscript();
	for (const l of longTurn(200)) applyLine(t, l);
	t.blocks.push({ kind: "warning", message: "The daemon went away; following the task on.", agor: "daemon-away" });
	view.show(t);
	view.flush();
	for (const mark of ["tool", "tool-result", "asked", "decided", "notice", "daemon-away"]) assert.ok(agor(el, mark).length > 0, mark);
	assert.equal(agor(el, "decided")[0].getAttribute("data-approved"), "true");
	assert.equal(agor(el, "tool")[0].textContent, "● Edit src/f0.gox := 0 → x := 1"); // the change on a line of its own
	assert.equal(agor(el, "tool")[1].textContent, "● Bash grep -n step1 *.go — find step 1");
	assert.equal(agor(el, "asked")[0].textContent, "? Bash wants permission: rm -f tmp0");
});

// A turn of 5,000 events through each path the page reads a task by:
// the prompt's NDJSON stream (Lines, applyLine) and the events stream
// (SSE, applySSE), a chunk of a few events at a time and a draw after
// each, as the page does when the frames keep up.
test("a turn of 5,000 events renders in time linear in its events (times printed)", (t) => {
	const lines = longTurn(5000);
	const ndjson = lines.map(l => JSON.stringify(l)).join("\n") + "\n";
	let sse = "";
	for (const l of lines.filter(l => l.event)) sse += `id: ${l.event.sequence}\nevent: ${l.event.event_type}\ndata: ${JSON.stringify(l.event)}\n\n`;
	sse += "event: end\ndata: completed\n\n";
	const runs = {
		"applyLine (NDJSON)": (tr, chunk) => { for (const l of chunk.lines.push(chunk.text)) applyLine(tr, JSON.parse(l)); },
		"applySSE (SSE)": (tr, chunk) => { for (const m of chunk.sse.push(chunk.text)) applySSE(tr, m); },
	};
	for (const [name, apply] of Object.entries(runs)) {
		const text = name.startsWith("applyLine") ? ndjson : sse;
		const el = document.createElement("div");
		const view = transcriptView(el, { schedule: () => {} });
		const tr = newTranscript();
		const reader = { lines: new Lines(), sse: new SSE() };
		const elements = made.elements;
		const step = 1000; // bytes a chunk: some 5 events
		const start = performance.now();
		for (let i = 0; i < text.length; i += step) {
			apply(tr, { ...reader, text: text.slice(i, i + step) });
			view.show(tr);
			view.flush();
		}
		const ms = performance.now() - start;
		assert.equal(tr.last, 5000);
		assert.equal(el.childNodes.length, tr.blocks.length);
		const perBlock = (made.elements - elements) / tr.blocks.length;
		assert.ok(perBlock < 8, `${perBlock} elements made a block: each block is made once`);
		t.diagnostic(`${name}: 5000 events, ${tr.blocks.length} blocks, ${view.stats.draws} draws in ${ms.toFixed(1)} ms ` +
			`(drawing ${view.stats.ms.toFixed(1)} ms, slowest draw ${view.stats.slowest.toFixed(2)} ms), ${perBlock.toFixed(2)} elements a block`);
	}
});

// The hook the browser check's long step draws through: absent unless
// the check asked for it, and the page's own path when it is there.
test("the long transcript's test hook is there only when asked for, and draws through the view", async () => {
	const { sessionsView } = await import("../src/sessions.js");
	const store = {};
	globalThis.window = { localStorage: { getItem: (k) => store[k] ?? null }, setTimeout };
	sessionsView({ name: "alice", admin: false });
	assert.equal(window.agorTest, undefined, "no hook in a person's page");
	store["agor-test-hooks"] = "1";
	const page = sessionsView({ name: "alice", admin: false });
	const lines = [...longTurn(5000), { result: { status: "completed", message_count: 1, token_usage: {} } }];
	const got = await window.agorTest.replay(lines.map(l => JSON.stringify(l)).join("\n") + "\n", 4096);
	assert.equal(got.events, 5000);
	assert.equal(got.nodes, got.blocks);
	assert.ok(got.draws > 100, `${got.draws} draws: a chunk a frame`);
	assert.equal(agor(page.el, "task-status")[0].getAttribute("data-status"), "completed");
	delete globalThis.window;
});

test("an interactive task's terminal event offers its UI's terminal: Attach opens that one", () => {
	const el = document.createElement("div");
	const opened = [];
	const view = transcriptView(el, { schedule: () => {}, attach: (id) => opened.push(id) });
	const t = newTranscript();
	applyLine(t, { task_id: "t1", session_id: "s1" });
	applyLine(t, ev(1, "terminal", { terminal_id: "term_abc123", pid: 4242 }));
	applyLine(t, ev(2, "terminal", { pid: 1 })); // no terminal named: nothing to attach to
	view.show(t);
	view.flush();
	assert.deepEqual(t.blocks, [{ kind: "terminal", id: "term_abc123", pid: 4242 }]);
	const note = el.childNodes[0];
	assert.equal(note.getAttribute("data-agor"), "ui-terminal");
	assert.match(note.textContent, /terminal term_abc123 \(process 4242\)/);
	const attach = note.childNodes.find(n => n.getAttribute && n.getAttribute("data-agor") === "attach-ui");
	attach.click();
	assert.deepEqual(opened, ["term_abc123"]);
});
