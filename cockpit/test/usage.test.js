// The Usage tab: the table, the budgets' bars and the marks the browser
// check reads, the Day/Month switch, the daemon's errors, and answers
// that cross.
import { test } from "node:test";
import assert from "node:assert/strict";
import { all, agor } from "./shim.js";
import { report, usageView } from "../src/usage.js";

const rep = {
	since: "2026-11-01T00:00:00+01:00", until: "2026-12-01T00:00:00+01:00", currency: "USD",
	rows: [
		{ user: "alice", model: "claude-sonnet-4", requests: 31, input_tokens: 120000, output_tokens: 9000, cache_read_tokens: 800000, cache_write_tokens: 40000, cost: 12.4 },
		{ user: "bob", model: "gpt-5", requests: 2, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0, cost: 0.0001 },
	],
	budgets: [
		{ user: "alice", period: "month", kind: "cost", spent: 16.5, reserved: 2.5, left: 1, bound: 20, resets_at: "2026-12-01T00:00:00+01:00" },
		{ user: "bob", period: "day", kind: "tokens", spent: 1500, bound: 1000, resets_at: "2026-11-28T00:00:00+01:00" },
	],
};
const wrap = (kids) => { const d = document.createElement("div"); d.append(...kids.filter(Boolean)); return d; };
const tag = (el, name) => all(el, n => n.tagName === name);
const cells = (tr) => tr.children.map(td => td.textContent);
const cls = (el, c) => all(el, n => n.className.split(" ").includes(c));

test("the table has a row per person and model, marked, and the total", () => {
	const el = wrap(report(rep));
	assert.equal(tag(el, "TABLE").length, 1);
	const rows = all(el, n => n.tagName === "TR" && n.getAttribute("data-user") !== null);
	assert.deepEqual(rows.map(r => [r.getAttribute("data-user"), r.getAttribute("data-model")]), [["alice", "claude-sonnet-4"], ["bob", "gpt-5"]]);
	assert.deepEqual(cells(rows[1]), ["bob", "gpt-5", "2", "10", "5", "0", "0", "<0.01"]);
	assert.deepEqual(cells(agor(el, "usage-total")[0]), ["Total", "", "33", "120010", "9005", "800000", "40000", "12.40"]);
	assert.deepEqual(tag(el, "TH").map(th => th.textContent).slice(-1), ["Cost (USD)"]);
	assert.equal(agor(el, "no-usage").length, 0);
});

test("each bound is a PatternFly progress bar: its line, share, width and state", () => {
	const el = wrap(report(rep));
	const [alice, bob] = agor(el, "budget");
	assert.deepEqual(["data-user", "data-period", "data-kind", "data-state"].map(a => alice.getAttribute(a)), ["alice", "month", "cost", "warning"]);
	assert.deepEqual(["data-user", "data-period", "data-kind", "data-state"].map(a => bob.getAttribute(a)), ["bob", "day", "tokens", "danger"]);
	assert.equal(alice.className, "pf-v5-c-progress pf-m-warning");
	assert.equal(bob.className, "pf-v5-c-progress pf-m-danger");
	assert.equal(agor(alice, "budget-line")[0].textContent, "alice: month cost 16.50 of 20.00 USD (82%), 2.50 reserved, 1.00 left, resets 2026-12-01");
	assert.equal(cls(alice, "pf-v5-c-progress__measure")[0].textContent, "82%");
	assert.equal(cls(alice, "pf-v5-c-progress__indicator")[0].getAttribute("style"), "width:82.5%;");
	assert.equal(cls(alice, "pf-v5-c-progress__bar")[0].getAttribute("aria-valuenow"), "83");
	assert.equal(cls(bob, "pf-v5-c-progress__indicator")[0].getAttribute("style"), "width:100.0%;");
	const calm = wrap(report({ ...rep, budgets: [{ ...rep.budgets[0], spent: 1 }] }));
	assert.equal(agor(calm, "budget")[0].className, "pf-v5-c-progress");
	assert.equal(agor(calm, "budget")[0].getAttribute("data-state"), "ok");
});

test("the gateway off: its note, no table; on with nothing spent: the table says so", () => {
	const off = wrap(report({ since: rep.since, until: rep.until, currency: "", rows: [] }));
	assert.equal(agor(off, "gateway-off")[0].textContent, "The model gateway is off: usage is recorded only when gateway.enabled is on.");
	assert.equal(tag(off, "TABLE").length, 0);
	const empty = wrap(report({ since: rep.since, until: rep.until, currency: "USD", rows: [] }));
	assert.equal(tag(empty, "TABLE").length, 1);
	assert.equal(agor(empty, "usage-total").length, 0);
	assert.equal(agor(empty, "no-usage")[0].textContent, "No model requests from 2026-11-01 00:00:00 to 2026-12-01 00:00:00.");
	assert.equal(agor(empty, "budgets").length, 0);
});

test("the tab asks for this month when shown, today on Day; the daemon's error in its words", async () => {
	const asked = [];
	let answer = rep;
	const v = usageView({ name: "alice", admin: false }, { ask: async (path) => { asked.push(path); if (answer instanceof Error) throw answer; return answer; }, every: 1e9 });
	await v.show();
	v.hide();
	assert.deepEqual(asked, ["/v1/usage?period=month"]);
	const body = all(v.el, n => n.getAttribute("id") === "agor-usage")[0];
	assert.equal(body.getAttribute("data-period"), "month");
	assert.equal(all(body, n => n.tagName === "TR" && n.getAttribute("data-user") === "alice").length, 1);
	const [day, month] = agor(v.el, "period");
	assert.deepEqual([day.getAttribute("aria-pressed"), month.getAttribute("aria-pressed")], ["false", "true"]);
	answer = { ...rep, rows: [], budgets: [] };
	day.click();
	await new Promise(r => setImmediate(r));
	assert.deepEqual(asked.at(-1), "/v1/usage?period=day");
	assert.deepEqual([day.getAttribute("aria-pressed"), month.getAttribute("aria-pressed")], ["true", "false"]);
	assert.ok(day.className.includes("pf-m-selected"));
	assert.equal(agor(body, "no-usage").length, 1);
	assert.equal(body.getAttribute("data-period"), "day");
	answer = new Error("you may act only as yourself");
	await v.choose("month");
	assert.equal(agor(body, "error")[0].textContent, "you may act only as yourself");
});

test("an answer overtaken by a later one is dropped", async () => {
	const pending = [];
	const v = usageView({ name: "root", admin: true }, { ask: (path) => new Promise(resolve => pending.push({ path, resolve })), every: 1e9 });
	const first = v.show();
	v.hide();
	const second = v.choose("day");
	pending[1].resolve({ ...rep, rows: [rep.rows[1]] });
	await second;
	pending[0].resolve(rep);
	await first;
	const users = all(v.el, n => n.tagName === "TR" && n.getAttribute("data-user") !== null).map(r => r.getAttribute("data-user"));
	assert.deepEqual(users, ["bob"], "the day's answer stays");
	assert.equal(all(v.el, n => n.getAttribute("id") === "agor-usage")[0].getAttribute("data-period"), "day");
});
