// A task's stream as the page shows it: the same reading of the event
// vocabulary as `agorctl prompt` (text as it comes, tool calls and their
// results, permission questions and answers, errors, a closing summary).
// Plain data in, plain blocks out, so that node's test runner can check it.

import { clip, toolView } from "./tools.js";

export { clip };

const clipAt = { output: 400 };

// call is a tool call or question block: the tool's name and its input
// as a person reads it (toolView), never the input itself.
function call(kind, d) {
	const v = toolView(d.tool_name || "", d.tool_input);
	return { kind, id: d.tool_use_id || "", name: String(d.tool_name || ""), input: v.text, note: v.note, change: v.change };
}

export function newTranscript() {
	return { task: "", session: "", blocks: [], last: -1, status: "", summary: null, error: "" };
}

// open is the text or thinking block the next delta of that kind joins.
function open(t, kind) {
	const b = t.blocks[t.blocks.length - 1];
	if (b && b.kind === kind && !b.closed) return b;
	const nb = { kind, text: "" };
	t.blocks.push(nb);
	return nb;
}

function closeText(t) {
	const b = t.blocks[t.blocks.length - 1];
	if (b && (b.kind === "text" || b.kind === "thinking")) b.closed = true;
}

// applyEvent adds one stored event ({sequence, event_type, event_data});
// an event seen before (a replay overlapping the live stream) is skipped.
export function applyEvent(t, stored) {
	if (!stored || typeof stored !== "object") return t; // not an event: nothing to show
	if (typeof stored.sequence === "number") {
		if (stored.sequence <= t.last) return t;
		t.last = stored.sequence;
	}
	const ev = (stored.event_data && typeof stored.event_data === "object") ? stored.event_data : {};
	const d = (ev.data && typeof ev.data === "object") ? ev.data : {};
	switch (ev.type || stored.event_type) {
	case "text_delta":
		open(t, "text").text += d.text ?? "";
		break;
	case "thinking_delta":
		open(t, "thinking").text += d.text ?? "";
		break;
	case "message_stop":
		closeText(t);
		break;
	case "tool_call":
		t.blocks.push(call("tool", d));
		break;
	case "tool_result":
		t.blocks.push({ kind: "result", id: d.tool_use_id || "", output: clip(typeof d.output === "string" ? d.output : JSON.stringify(d.output ?? ""), clipAt.output), isError: d.is_error === true });
		break;
	case "permission_asked":
		t.blocks.push(call("ask", d));
		break;
	case "permission_decided":
		t.blocks.push({ kind: "decided", approved: d.approved === true, reason: String(d.reason ?? "") });
		break;
	case "error":
		t.blocks.push({ kind: "error", code: String(d.code ?? ""), message: String(d.message ?? "") });
		break;
	case "sandbox":
		if (d.warning) t.blocks.push({ kind: "warning", message: `sandbox ${d.level} not enforced: ${d.warning}` });
		break;
	case "terminal": // an interactive task: its agent's own UI runs on this terminal
		if (d.terminal_id) t.blocks.push({ kind: "terminal", id: String(d.terminal_id), pid: Number(d.pid) || 0 });
		break;
	case "notice": // the daemon's word during the turn: a budget nearly spent
		t.blocks.push({ kind: "warning", message: String(d.message ?? ""), agor: "notice" });
		break;
	}
	return t;
}

// summarize is a result's closing line, as agorctl prints it.
export function summarize(res) {
	const u = res.token_usage || {};
	return {
		status: res.status || "",
		messages: res.message_count || 0,
		tokensIn: u.input_tokens || 0,
		tokensOut: u.output_tokens || 0,
		error: res.error ? `${res.error.code}: ${res.error.message}` : "",
		warnings: Array.isArray(res.warnings) ? res.warnings : [],
	};
}

// applyLine adds one line of a streamed prompt (POST .../prompt, NDJSON):
// the ids, an event, the result or the daemon's error.
export function applyLine(t, line) {
	if (!line || typeof line !== "object") return t;
	if (line.task_id) {
		t.task = line.task_id;
		t.session = line.session_id || "";
	}
	if (line.event) applyEvent(t, line.event);
	if (line.result && typeof line.result === "object") {
		t.summary = summarize(line.result);
		t.status = t.summary.status;
		// The daemon recorded the task otherwise ("incomplete": events it
		// could not store), and says why: as agorctl prompt shows it.
		if (typeof line.status === "string" && line.status) t.status = t.summary.status = line.status;
		if (typeof line.warning === "string" && line.warning) t.summary.warnings = [...t.summary.warnings, line.warning];
	}
	if (line.error && line.error.error) {
		t.error = line.error.error.message;
		t.status = "failed";
	}
	return t;
}

// Lines splits a byte stream's text into whole lines, keeping a partial
// one until its end comes. Bounded: a line over max is an error.
export class Lines {
	constructor(max = 8 << 20) { this.buf = ""; this.max = max; }
	// push returns the lines chunk completes; blank ones only when keepBlank.
	push(chunk, keepBlank = false) {
		this.buf += chunk;
		const parts = this.buf.split("\n");
		this.buf = parts.pop();
		if (this.buf.length > this.max) throw new Error(`a line of more than ${this.max} bytes`);
		return keepBlank ? parts : parts.filter(l => l.trim() !== "");
	}
}

// SSE reads text/event-stream: push(chunk) returns the complete messages
// ({event, id, data}) in it.
export class SSE {
	constructor() { this.lines = new Lines(); this.cur = { event: "message", id: "", data: [] }; }
	push(chunk) {
		const out = [];
		for (const raw of this.lines.push(chunk, true)) {
			const l = raw.replace(/\r$/, "");
			if (l === "") {
				if (this.cur.data.length) out.push({ event: this.cur.event, id: this.cur.id, data: this.cur.data.join("\n") });
				this.cur = { event: "message", id: "", data: [] };
				continue;
			}
			const i = l.indexOf(":");
			const field = i < 0 ? l : l.slice(0, i);
			const value = i < 0 ? "" : l.slice(i + 1).replace(/^ /, "");
			if (field === "event") this.cur.event = value;
			else if (field === "id") this.cur.id = value;
			else if (field === "data") this.cur.data.push(value);
		}
		return out;
	}
}

// applySSE adds one message of GET /v1/tasks/{id}/events: an event, or
// the end with the task's status.
export function applySSE(t, msg) {
	if (msg.event === "end") {
		t.status = msg.data;
		return t;
	}
	let ev;
	try {
		ev = JSON.parse(msg.data);
	} catch {
		t.blocks.push({ kind: "error", code: "", message: `an event the page cannot read: ${clip(msg.data, 80)}` });
		return t;
	}
	return applyEvent(t, ev);
}

// resumable says whether a prompt's stream ended before its task did (the
// daemon went away: a restart, an upgrade): the task runs on in its
// executor and the next daemon takes it over, so the page follows it from
// the last event shown.
export function resumable(t) {
	return Boolean(t.task) && !t.status && !t.error;
}

// metrics reads the Prometheus text of /v1/metrics into
// {user: {series: value}} for the executor usage series.
export function usageFromMetrics(text) {
	const out = {};
	for (const l of text.split("\n")) {
		const m = /^agor_executor_([a-z_]+)\{user="([^"]*)"\} ([0-9.eE+-]+)$/.exec(l);
		if (!m) continue;
		(out[m[2]] ||= {})[m[1]] = Number(m[3]);
	}
	return out;
}
