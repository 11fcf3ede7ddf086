// The admin listener from the bench's side (bench/pack-load.ts, bench/shadow-cost.ts): one POST with
// the admin key, its status, time and body.
export const BENCH_ADMIN_KEY = 'bench-admin-key-0123456789';

export async function adminPost(port: number, route: string, body: unknown): Promise<{ status: number; ms: number; text: string }> {
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}${route}`, { method: 'POST', headers: { Authorization: `Bearer ${BENCH_ADMIN_KEY}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, ms: Math.round(performance.now() - started), text: await res.text() };
}
