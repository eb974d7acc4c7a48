// Arm assignment, as schemas/assignment.py publishes it: u = first 8 bytes (big-endian) of
// SHA-256 of UTF-8 "salt:install_id:query", divided by 2^64; the arm is the first whose
// cumulative weight exceeds u * sum(weights). The query is hashed here and never sent.

export async function unitInterval(installId, query, salt) {
  const bytes = new TextEncoder().encode(`${salt}:${installId}:${query}`);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  let big = 0n;
  for (let i = 0; i < 8; i += 1) big = (big << 8n) | BigInt(digest[i]);
  return Number(big) / 2 ** 64; // Number() rounds to nearest, as Python's int / int does
}

export function pickArm(u, arms) {
  const total = arms.reduce((sum, a) => sum + a.weight, 0);
  if (!(total > 0) || arms.some((a) => a.weight < 0)) throw new Error("arm weights must be non-negative with a positive sum");
  let point = u * total;
  for (const a of arms) {
    point -= a.weight;
    if (point < 0) return a.arm;
  }
  return arms[arms.length - 1].arm;
}

// The arms an engine runs: an experiment may run only some of them on an engine
// (engine_arms, as the paper ran only swap 1-2 on Bing); other engines run every arm.
export function armsFor(experiment, engine) {
  const only = experiment.engine_arms && experiment.engine_arms[engine];
  return Array.isArray(only) && only.length > 0 ? only : experiment.arms;
}

export async function assignArm(installId, query, salt, arms) {
  return pickArm(await unitInterval(installId, query, salt), arms);
}
