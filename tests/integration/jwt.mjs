// jwt.mjs — tokens for the auth tests, made with node:crypto only: HS256, RS256 and EdDSA
// signing, RSA and Ed25519 key pairs, JWKs, and a small JWKS server on a free loopback port.
import crypto from 'node:crypto';
import http from 'node:http';

const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
export const nowS = () => Math.floor(Date.now() / 1000);

// header + claims → a signed token. alg HS256 takes a secret string; RS256 and EdDSA a
// private KeyObject. header overrides the default { alg, typ: 'JWT' } (kid etc.).
export function sign(alg, key, claims, header = {}) {
  const h = { alg, typ: 'JWT', ...header };
  const input = `${b64(h)}.${b64(claims)}`;
  let sig;
  if (alg === 'HS256') sig = crypto.createHmac('sha256', key).update(input).digest();
  else if (alg === 'RS256') sig = crypto.sign('sha256', Buffer.from(input), key);
  else if (alg === 'EdDSA') sig = crypto.sign(null, Buffer.from(input), key);
  else if (alg === 'none') sig = Buffer.alloc(0);
  else throw new Error(`no signer for ${alg}`);
  return `${input}.${sig.toString('base64url')}`;
}

export function rsaPair() {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { publicKey, privateKey, pem: publicKey.export({ type: 'spki', format: 'pem' }) };
}

export function edPair() {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
  return { publicKey, privateKey, pem: publicKey.export({ type: 'spki', format: 'pem' }) };
}

export function jwk(publicKey, kid, extra = {}) {
  return { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', ...extra };
}

// A JWKS endpoint: keys are whatever server.keys holds when asked; server.hits counts fetches.
export async function jwksServer(keys = []) {
  const srv = http.createServer((req, res) => {
    srv.hits++;
    if (srv.failing) { res.writeHead(500); res.end('down'); return; }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: srv.keys }));
  });
  srv.keys = keys;
  srv.hits = 0;
  srv.failing = false;
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  srv.url = `http://127.0.0.1:${srv.address().port}/.well-known/jwks.json`;
  srv.stop = () => new Promise((r) => srv.close(r));
  return srv;
}

export const bearer = (t) => ({ authorization: `Bearer ${t}` });
