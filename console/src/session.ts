/**
 * The admin token lives in sessionStorage: gone when the tab closes, never in a
 * cookie (so no request carries it unless the console adds the header itself).
 */
const KEY = 'webhook-inbox.admin-token';

export interface TokenStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export function loadToken(store: TokenStore): string | null {
  return store.getItem(KEY);
}

export function saveToken(store: TokenStore, token: string): void {
  store.setItem(KEY, token);
}

export function forgetToken(store: TokenStore): void {
  store.removeItem(KEY);
}
