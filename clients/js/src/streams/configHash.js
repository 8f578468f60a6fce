// config_hash: SHA-256 (lower-case hex) of the chain's structural shape, equal to the 2.x Python
// SDK's (queen.streams.util.config_hash) for the same chain: every operator in order, the
// terminal .to()/.foreach() included, as {"kind": kind, ...config} (a config "kind" replaces the
// value, the key stays first), serialised without whitespace, keys in insertion order, non-ASCII
// raw. Callables are never hashed. Integral numbers render without a decimal point (pass integers:
// Python would render 60.0 for a float).
import { createHash } from 'node:crypto';

export function canonicalChain(operators) {
  return JSON.stringify(operators.map((op) => {
    const d = { kind: op.kind };
    for (const [k, v] of Object.entries(op.config ?? {})) d[k] = v;
    return d;
  }));
}

export function configHashOf(operators) {
  return createHash('sha256').update(canonicalChain(operators), 'utf8').digest('hex');
}
