/** An APL error's place, from the service's message ("line L, column C: …"). Pure. */

/** Where an APL error is: "line 2, column 7: …" → its offset in `text` and the reason. */
export function errorPlace(text: string, message: string): { from: number; to: number; reason: string } | undefined {
  const m = /line (\d+), column (\d+): (.*)$/s.exec(message);
  if (!m) return undefined;
  const lines = text.split('\n');
  const line = Math.min(Number(m[1]), lines.length);
  let from = 0;
  for (let i = 0; i < line - 1; i++) from += lines[i]!.length + 1;
  const lineText = lines[line - 1] ?? '';
  const column = Math.min(Math.max(Number(m[2]), 1), lineText.length + 1);
  from += column - 1;
  // The word at the place, or one character.
  const rest = /^[\w$.-]+/.exec(lineText.slice(column - 1))?.[0].length ?? 1;
  return { from, to: Math.min(from + Math.max(rest, 1), text.length), reason: m[3]! };
}
