// How a value read from JSON reads in an error message. JSON.stringify prints Infinity and NaN as null,
// and 1e999 in a JSON file parses to Infinity: "must be a number, got null" would hide the real problem.

export function valueText(v: unknown): string {
  return typeof v === 'number' ? String(v) : JSON.stringify(v);
}
