// The API key, kept only in this tab's sessionStorage: it is gone when the tab closes, and never
// reaches localStorage, a cookie or a URL.
const SLOT = 'catcomfort.inspect.api-key';

export function storedKey(): string | null {
  return sessionStorage.getItem(SLOT);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(SLOT, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(SLOT);
}
