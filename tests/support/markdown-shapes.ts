// Answers whose HTML dwarfs their text, for src/ui/markdown.ts: the worst it still renders (each at one of
// its limits) and ones it must show as plain text. The tests check both sides; bench/markdown-render.ts
// times them in Chromium.

export type MarkdownLimits = {
  chars: number;
  tableCells: number;
  linkExpansion: number;
  elements: number;
  htmlChars: number;
};

export type Shape = { name: string; text: string };
export type RefusedShape = Shape & { why: RegExp };

/** A GFM table: `columns` header cells, its delimiter row (`delimiter` for each column), `rows` lines of `row`. */
export const table = (columns: number, rows: number, row = '|', delimiter = '-', nl = '\n') =>
  `${'|'.repeat(columns + 1)}${nl}|${`${delimiter}|`.repeat(columns)}${nl}${`${row}${nl}`.repeat(rows)}`;

/** An address `length` characters long. */
export const url = (length: number, c = 'x') => `http://a.b/${c.repeat(length - 11)}`;

const n = (k: number) => k.toLocaleString('en');

export function acceptedShapes(lim: MarkdownLimits): Shape[] {
  // markdownHazard counts a table's cells as columns × (rows + 2): the header, and its delimiter row again.
  let side = Math.floor(Math.sqrt(lim.tableCells));
  while (side * (side + 2) > lim.tableCells) side--;
  const wide = Math.floor(lim.tableCells / 3);
  const tall = Math.floor(lim.tableCells / 2) - 2;
  const uses = Math.floor(lim.linkExpansion / (20_000 - 3));
  const els = lim.elements;
  return [
    { name: `table ${side}×${side}, centred empty cells`, text: table(side, side, '|', ':-:') },
    { name: `table ${n(wide)}×1`, text: table(wide, 1) },
    { name: `table 2×${n(tall)}`, text: table(2, tall, 'a') },
    { name: `reference: 20 KB address × ${uses} uses`, text: `[a]: <${url(20_000)}>\n\n${'[a] '.repeat(uses)}` },
    { name: `reference: 20 KB address of & × ${uses} uses`, text: `[a]: <${url(20_000, '&')}>\n\n${'[a] '.repeat(uses)}` },
    { name: `reference: 11 B address × ${n(els - 1)} uses`, text: `[a]: ${url(11)}\n\n${'[a] '.repeat(els - 1)}` },
    { name: `${n(els - 1)} empty list items`, text: '-\n'.repeat(els - 1) },
    { name: `${n(els)} empty headings`, text: '#\n'.repeat(els) },
    { name: `${n(els / 2)} emphasised paragraphs`, text: '*a*\n\n'.repeat(els / 2) },
    { name: `${n(els / 2 - 1)} e-mail autolinks`, text: 'a@b.cc '.repeat(els / 2 - 1) },
    { name: `${n(lim.chars)} &`, text: '&'.repeat(lim.chars) },
  ];
}

export function refusedShapes(lim: MarkdownLimits): RefusedShape[] {
  const cells = /its tables have more than \d+ cells/;
  const links = /its links repeat more than \d+ characters of addresses/;
  const elements = /it would make more than \d+ HTML elements/;
  const uses = Math.floor(lim.linkExpansion / (20_000 - 3)) + 1;
  const long = `[a]: <${url(20_000)}>\n\n`;
  let side = Math.floor(Math.sqrt(lim.tableCells));
  while (side * (side + 2) <= lim.tableCells) side++;
  const rows = lim.tableCells;
  return [
    { name: `table ${side}×${side}`, text: table(side, side), why: cells },
    { name: 'table 1000×1000 (6 KB)', text: table(1000, 1000), why: cells },
    { name: 'table 1500×1500 (9 KB)', text: table(1500, 1500), why: cells },
    { name: 'table of 8000 columns (49 KB)', text: table(8000, 4000).slice(0, 49_000), why: cells },
    { name: 'table with no outer pipes', text: `${'a|'.repeat(300)}a\n${'-|'.repeat(300)}-\n${'a\n'.repeat(300)}`, why: cells },
    { name: 'table in a block quote', text: `> text\n>\n> ${table(300, 300).replaceAll('\n', '\n> ')}`, why: cells },
    { name: 'table in a list item', text: `- ${table(300, 300).replaceAll('\n', '\n  ')}`, why: cells },
    { name: 'table written with lone \\r', text: table(300, 300, '|', '-', '\r'), why: cells },
    { name: 'table whose rows are apart by tab lines', text: table(300, 0) + '|\n\t\n'.repeat(300), why: cells },
    { name: 'wide table after a narrow one, no blank line between', text: `${table(1, 1)}# h\n${table(300, 300)}`, why: cells },
    { name: `table 2×${n(rows)}`, text: table(2, rows, 'a'), why: cells },
    { name: 'reference used 9000 times (issue)', text: `${long}${'[a]'.repeat(9000)}`, why: links },
    { name: `reference used ${uses} times`, text: `${long}${'[a] '.repeat(uses)}`, why: links },
    { name: 'reference image', text: `${long}${'![a] '.repeat(uses)}`, why: links },
    { name: 'full and collapsed references, another case', text: `${long}${'[x][a] [A][] '.repeat(uses)}`, why: links },
    { name: 'reference defined in a block quote', text: `> [a]: <${url(20_000)}>\n\n${'[a] '.repeat(uses)}`, why: links },
    { name: 'reference defined with a long title', text: `[a]: u "${'t'.repeat(20_000)}"\n\n${'[a] '.repeat(uses)}`, why: links },
    { name: `${n(lim.chars / 2)} empty list items`, text: '-\n'.repeat(lim.chars / 2), why: elements },
    { name: `${n(lim.elements + 1)} empty headings`, text: '#\n'.repeat(lim.elements + 1), why: elements },
    {
      name: `reference: 20 KB address of & × ${uses - 1} uses, and 100 &`,
      text: `[a]: <${url(20_000, '&')}>\n\n${'[a] '.repeat(uses - 1)}${'&'.repeat(100)}`,
      why: /its HTML would be longer than \d+ characters/,
    },
  ];
}
