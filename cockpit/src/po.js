// poToCockpit turns a .po file into the po.LANG.js Cockpit's bridge serves
// as po.js to a browser asking for LANG: cockpit.locale({msgid: [null,
// msgstr]}). Only what the page uses: msgid/msgstr, one-line or continued.
export function poToCockpit(text, lang) {
	const dict = {};
	let id = null;
	let str = null;
	let into = null;
	const unq = (s) => JSON.parse(s);
	const flush = () => {
		if (id && str) dict[id] = [null, str];
		id = str = into = null;
	};
	for (const raw of text.split("\n")) {
		const l = raw.trim();
		if (l.startsWith("msgid ")) { flush(); id = unq(l.slice(6)); into = "id"; } else if (l.startsWith("msgstr ")) { str = unq(l.slice(7)); into = "str"; } else if (l.startsWith('"') && into === "id") id += unq(l);
		else if (l.startsWith('"') && into === "str") str += unq(l);
		else if (l === "" || l.startsWith("#")) { if (l === "") flush(); }
	}
	flush();
	// The header's plural rule is a function in Cockpit's own po.js files
	// (two forms, as German and English have).
	const head = `"": {"plural-forms": function(n) { return n != 1 ? 1 : 0; }, "language": ${JSON.stringify(lang)}}`;
	const body = Object.entries(dict).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`);
	return `cockpit.locale({${[head, ...body].join(",\n")}});\n`;
}
