/**
 * A separate process racing others on one SQLite file (spawned by store.test.ts): records jtis 0…n-1,
 * then tries to consume one session; prints `{ recorded, errors, consumed }` as JSON.
 */
import { openSqliteStore } from "../../src/store/sqlite.ts";

const [path, sessionId, clientId, n] = process.argv.slice(2);
if (!path || !sessionId || !clientId || !n) throw new TypeError("usage: store-worker.ts PATH SESSION CLIENT N");
const store = openSqliteStore(path);
let recorded = 0;
let errors = 0;
for (let i = 0; i < Number(n); i++) {
  try {
    if (await store.recordJti("agent-x", `jti-${i}`, 2e12, 1e12)) recorded++;
  } catch (err) {
    errors++;
    console.error(String(err));
  }
}
const consumed = (await store.consumeSession(sessionId, clientId, 1)) !== null;
await store.close();
console.log(JSON.stringify({ recorded, errors, consumed }));
