/**
 * The token the user signed in with: held for this tab only (sessionStorage), never in localStorage, a
 * cookie or the URL, so closing the tab forgets it and no other site can make the browser send it.
 */
const KEY = 'ferry.token';

export function storedToken(): string | undefined {
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function keepToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
