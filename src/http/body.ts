// Body limit: declared content-length first (rejected before reading), then the bytes actually read.
import { ApiError } from "./errors";

export const MAX_BODY_BYTES = 1_048_576;

const tooLarge = () => new ApiError("PAYLOAD_TOO_LARGE", `Request body exceeds ${MAX_BODY_BYTES} bytes.`);

export async function readBodyText(request: Request, limit = MAX_BODY_BYTES): Promise<string | null> {
  const declared = request.headers.get("content-length");
  if (declared != null && Number(declared) > limit) throw tooLarge();
  if (!request.body) return null;
  if (declared != null && /^\d+$/.test(declared)) {
    // Declared and within the limit (the usual case): the runtime reads it natively; the byte count
    // is still checked, since a body may not match its header.
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > limit) throw tooLarge();
    return bytes.byteLength ? new TextDecoder().decode(bytes) : null;
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  if (total === 0) return null;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  return new TextDecoder().decode(bytes);
}
