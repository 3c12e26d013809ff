import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * A self-signed certificate for 127.0.0.1 made by openssl (node:crypto cannot make X.509), written
 * to `dir`/cert.pem and `dir`/key.pem; undefined when openssl is not installed.
 */
export function selfSignedCertificate(dir: string): { cert: string; key: string; certFile: string; keyFile: string } | undefined {
  const certFile = `${dir}/cert.pem`;
  const keyFile = `${dir}/key.pem`;
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'pipe' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
}

/** Why selfSignedCertificate cannot work here (no openssl on the PATH), or undefined. */
export function opensslMissing(): string | undefined {
  try {
    execFileSync('openssl', ['version'], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'openssl not found on the PATH (install openssl)';
    throw error;
  }
}
