/** A page's error, shown in place and announced to screen readers; nothing when there is none. */
export function ErrorNote(p: { message?: string; testid?: string }) {
  if (!p.message) return null;
  return (
    <div class="error" role="alert" data-testid={p.testid}>
      {p.message}
    </div>
  );
}
