// Model usage as the page words it: what agorctl usage prints, cell for
// cell and line for line (internal/ctl/cli/modelusage_test.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import "./shim.js";
import { fixed, money, count, stamp, usageRows, heads, budget, budgets, gatewayOff, none, span } from "../src/usagefmt.js";

// The wire's golden reply (internal/wire/apiwire/testdata/usage), which
// TestGoldenUsage pins.
const golden = JSON.parse(readFileSync(new URL("../../internal/wire/apiwire/testdata/usage/usage_report.json", import.meta.url), "utf8"));

// agorctl's own report (TestUsageTable), as the daemon would send it.
const report = {
	since: "2026-11-01T00:00:00+01:00", until: "2026-12-01T00:00:00+01:00", currency: "USD",
	rows: [
		{ user: "alice", model: "claude-sonnet-4", requests: 31, input_tokens: 120000, output_tokens: 9000, cache_read_tokens: 800000, cache_write_tokens: 40000, cost: 12.4 },
		{ user: "bob", model: "gpt-5", requests: 2, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0, cost: 0.0001 },
	],
	budgets: [
		{ user: "alice", period: "month", kind: "cost", spent: 12.4, reserved: 1.1, left: 6.5, bound: 20, resets_at: "2026-12-01T00:00:00+01:00" },
		{ user: "bob", period: "day", kind: "tokens", spent: 1500, reserved: 0, left: 0, bound: 1000, resets_at: "2026-11-28T00:00:00+01:00" },
	],
};

test("rows become agorctl's cells, with a total row", () => {
	const { rows, total } = usageRows(report);
	assert.deepEqual(rows, [
		{ user: "alice", model: "claude-sonnet-4", cells: ["alice", "claude-sonnet-4", "31", "120000", "9000", "800000", "40000", "12.40"] },
		{ user: "bob", model: "gpt-5", cells: ["bob", "gpt-5", "2", "10", "5", "0", "0", "<0.01"] },
	]);
	assert.deepEqual(total, ["Total", "", "33", "120010", "9005", "800000", "40000", "12.40"]);
	assert.deepEqual(heads("USD"), ["Person", "Model", "Requests", "In", "Out", "Cache read", "Cache write", "Cost (USD)"]);
	assert.equal(heads("").at(-1), "Cost");
});

test("a row without a model shows -, missing counts 0; no rows, no total", () => {
	const { rows } = usageRows({ rows: [{ user: "carol", model: "", requests: 1 }] });
	assert.deepEqual(rows[0].cells, ["carol", "-", "1", "0", "0", "0", "0", "0.00"]);
	assert.equal(rows[0].model, "");
	for (const r of [{ rows: [] }, { rows: null }, {}, null]) assert.deepEqual(usageRows(r), { rows: [], total: null });
});

test("the golden reply reads as agorctl prints it", () => {
	assert.deepEqual(usageRows(golden).rows[0].cells, ["alice", "claude-sonnet-4", "31", "120000", "9000", "800000", "40000", "12.40"]);
	assert.deepEqual(budgets(golden).map(b => b.text), ["alice: month cost 12.40 of 20.00 USD (62%), 1.10 reserved, 6.50 left, resets 2026-12-01"]);
	assert.equal(span(golden), "From 2026-11-01 00:00:00 to 2026-12-01 00:00:00");
	assert.equal(gatewayOff(golden), "");
});

test("budget lines are agorctl's, with the bar's share and state", () => {
	assert.deepEqual(budgets(report), [
		{ user: "alice", period: "month", kind: "cost", text: "alice: month cost 12.40 of 20.00 USD (62%), 1.10 reserved, 6.50 left, resets 2026-12-01", share: "62%", percent: 62, state: "" },
		{ user: "bob", period: "day", kind: "tokens", text: "bob: day tokens 1500 of 1000 (150%, reached), 0 reserved, 0 left, resets 2026-11-28", share: "150%, reached", percent: 100, state: "danger" },
	]);
});

test("a bar warns from 80% of its bound and is danger once it is reached", () => {
	const at = (spent, bound = 20) => budget({ user: "alice", period: "day", kind: "cost", spent, bound, resets_at: "2026-11-29T00:00:00-05:00" }, "EUR");
	const cases = [
		[0, "", "0%", 0], [15.99, "", "80%", 79.95], [16, "warning", "80%", 80], [19.999, "warning", "100%", 99.995],
		[20, "danger", "100%, reached", 100], [25, "danger", "125%, reached", 100],
	];
	for (const [spent, state, share, percent] of cases) {
		const b = at(spent);
		assert.equal(b.state, state, `state at ${spent} of 20`);
		assert.equal(b.share, share, `share at ${spent} of 20`);
		assert.ok(Math.abs(b.percent - percent) < 1e-9, `bar at ${spent} of 20: ${b.percent}`);
	}
	assert.equal(at(16).text, "alice: day cost 16.00 of 20.00 EUR (80%), 0.00 reserved, 0.00 left, resets 2026-11-29", "the reset in the daemon's calendar, not the browser's");
	assert.equal(budget({ user: "x", period: "month", kind: "cost", spent: 1, bound: 2, resets_at: "2026-12-01T00:00:00Z" }, "").text,
		"x: month cost 1.00 of 2.00 (50%), 0.00 reserved, 0.00 left, resets 2026-12-01", "no currency, no trailing space");
	assert.equal(budget({ user: "x", period: "day", kind: "tokens", spent: 5, bound: 0, resets_at: "" }, "USD").share, "-", "no bound, no share");
});

test("the gateway off is said, only when the reply has nothing and no currency", () => {
	const off = "The model gateway is off: usage is recorded only when gateway.enabled is on.";
	assert.equal(gatewayOff({ since: report.since, until: report.until, currency: "", rows: [] }), off);
	assert.equal(gatewayOff({ currency: "", rows: [], budgets: [] }), off);
	assert.equal(gatewayOff({ currency: "", rows: report.rows }), "", "rows written while it was on are shown");
	assert.equal(gatewayOff({ currency: "USD", rows: [] }), "", "on, and nothing spent yet");
});

test("costs to the cent as Go's %.2f, under a cent as <0.01", () => {
	for (const [v, want] of [[0, "0.00"], [0.0001, "<0.01"], [0.0049, "<0.01"], [1e-9, "<0.01"], [0.005, "0.01"], [0.015, "0.01"], [12.4, "12.40"], [2.675, "2.67"], [0.125, "0.12"], [0.375, "0.38"], [123456.785, "123456.79"]]) {
		assert.equal(money(v), want, `money(${v})`);
	}
	// An exact tie rounds to even, as strconv does; anything else as toFixed.
	for (const [v, d, want] of [[62.5, 0, "62"], [63.5, 0, "64"], [0.5, 0, "0"], [1.5, 0, "2"], [2.5, 0, "2"], [-2.5, 0, "-2"], [0.135, 2, "0.14"], [62.4999, 0, "62"], [80.50000000000001, 0, "81"]]) {
		assert.equal(fixed(v, d), want, `fixed(${v}, ${d})`);
	}
	assert.equal(budget({ user: "a", period: "month", kind: "cost", spent: 12.5, bound: 20, resets_at: "" }, "USD").share, "62%", "62.5% is 62% in agorctl");
	assert.equal(count(120000), "120000");
	assert.equal(count(undefined), "0");
});

test("times in the daemon's zone, as time.DateTime", () => {
	assert.equal(stamp("2026-11-01T00:00:00.123456789+01:00"), "2026-11-01 00:00:00");
	assert.equal(none(report), "No model requests from 2026-11-01 00:00:00 to 2026-12-01 00:00:00.");
	assert.equal(stamp(""), "");
});

test("every string of the Usage tab has its German", () => {
	const po = readFileSync(new URL("../po/de.po", import.meta.url), "utf8");
	const ids = new Set([...po.matchAll(/^msgid (".*")$/gm)].map(m => JSON.parse(m[1])));
	for (const f of ["usage.js", "usagefmt.js"]) {
		const src = readFileSync(new URL(`../src/${f}`, import.meta.url), "utf8");
		const strings = [...src.matchAll(/_\(("(?:[^"\\]|\\.)*")\)/g)].map(m => JSON.parse(m[1]));
		assert.ok(strings.length > 3, `${f}'s strings are found`);
		for (const s of strings) assert.ok(ids.has(s), `${f}: ${JSON.stringify(s)} is not in po/de.po`);
	}
});
