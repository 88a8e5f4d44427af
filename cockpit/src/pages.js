// The daemon lists sessions and tasks oldest first, at most 1000 a
// request (?limit, ?after the last id of the page before). allPages
// follows the pages to the end: a person's newest sessions are the ones
// she looks for, and they come last.

// allPages gets every page of a list: fetch(query) resolves to the
// daemon's reply, whose key holds the page's items (each with an id).
export async function allPages(fetch, key, limit = 1000, maxPages = 100) {
	const all = [];
	let after = "";
	for (let i = 0; i < maxPages; i++) {
		const q = `limit=${limit}` + (after ? `&after=${encodeURIComponent(after)}` : "");
		const page = (await fetch(q))[key] || [];
		all.push(...page);
		if (page.length < limit) break;
		after = page[page.length - 1].id;
	}
	return all;
}
