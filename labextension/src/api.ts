import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** Where the server extension answers, under the server's base URL. */
const API_PATH = 'ipy-gpuguard/api/v1';

/**
 * GET an endpoint of the server extension; `null` for a 404 (nothing recorded), an error with
 * the server's message for anything else that is not 200.
 */
export async function requestAPI<T>(
  path: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings(),
  init: RequestInit = {}
): Promise<T | null> {
  const url = URLExt.join(settings.baseUrl, API_PATH, path);
  const response = await ServerConnection.makeRequest(url, init, settings);
  if (response.status === 404) {
    return null;
  }
  const text = await response.text();
  if (!response.ok) {
    let message = text;
    try {
      message = JSON.parse(text).message ?? text;
    } catch {
      // not JSON: the text is the message
    }
    throw new Error(`${response.status}: ${message}`);
  }
  return JSON.parse(text) as T;
}

/** POST `body` as JSON to an endpoint of the server extension; as {@link requestAPI}. */
export function postAPI<T>(path: string, body: unknown): Promise<T | null> {
  return requestAPI<T>(path, ServerConnection.makeSettings(), {
    method: 'POST',
    body: JSON.stringify(body)
  });
}
