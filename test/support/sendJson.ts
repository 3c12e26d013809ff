/** `method` `url` with a bearer token and `body` as JSON: the response, its body not read. */
export function sendJson(url: string, method: string, token: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}
