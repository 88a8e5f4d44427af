import { test } from "node:test";
import assert from "node:assert/strict";
import { allPages } from "../src/pages.js";

// A daemon's list of n items served a page at a time, oldest first.
function lister(n) {
	const items = Array.from({ length: n }, (_, i) => ({ id: `s${String(i).padStart(4, "0")}` }));
	const asked = [];
	return {
		asked,
		fetch: async (q) => {
			asked.push(q);
			const p = new URLSearchParams(q);
			const limit = Number(p.get("limit"));
			const from = p.get("after") ? items.findIndex(x => x.id === p.get("after")) + 1 : 0;
			return { sessions: items.slice(from, from + limit) };
		},
	};
}

test("every page is followed to the newest", async () => {
	const l = lister(25);
	const got = await allPages(l.fetch, "sessions", 10);
	assert.equal(got.length, 25);
	assert.equal(got[24].id, "s0024");
	assert.deepEqual(l.asked, ["limit=10", "limit=10&after=s0009", "limit=10&after=s0019"]);
});

test("an exact multiple ends on the empty page; the page bound holds", async () => {
	const l = lister(20);
	assert.equal((await allPages(l.fetch, "sessions", 10)).length, 20);
	assert.equal(l.asked.length, 3);
	const m = lister(100);
	assert.equal((await allPages(m.fetch, "sessions", 10, 2)).length, 20);
});
